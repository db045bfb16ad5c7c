"""A lab of a partitioned scheduler (beyond the articles, after A1's leader and A4's
Curator): a leader cut off from ZooKeeper that goes on running the cluster's jobs.

Leader election (lab C24) makes a job run once per fire time only while there
is one leader. Cut the leader off from ZooKeeper and it cannot hear that its
session has expired: the server says so only to a client that reaches it.
Meanwhile the server does expire it, and elects the next candidate. A leader
that acts on its memory of being elected now runs every fire time alongside
the new one. Curator's rule is the fix: a leader stops leading the moment its
connection is SUSPENDED (it can no longer know), which comes before the
session can expire (a client notices a silent server within two thirds of
the session), and asks the server again before it writes.

The lab's own scheduler A runs on the machine and leads first; a shop instance,
shop-1, stands behind it. Forced, never left to luck: A leads before shop-1
stands, the cut lasts five sessions (shop-1 is elected after one), and A's
runs and shop-1's land in the same database, which both still reach.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime

from sqlalchemy import select

from locks import LockError
from locks.zk_election import LeaderElection
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.zookeeper_servers import ZooKeeperServer
from lockshop.workshop.staging.record import Lab
from shop.config import Config
from shop.jobs.tasks import JOBS
from shop.store.db import make_engine, make_sessions
from shop.store.models import JobRun, utc_at
from shop.i18n import N_, _

SESSION_MS = 1000
INTERVAL_MS = 500
CUT_S = 5 * SESSION_MS / 1000
A = "A (the lab, on the machine)"


def a_schedules(election: LeaderElection, sessions, *, trusts_memory: bool,
                stop: threading.Event) -> None:
    """A's scheduler: at every fire time, run the jobs if A leads.

    ``trusts_memory``: A leads from the moment it was elected, for good. Otherwise A
    leads while ``is_leader()`` says so (connected, same session), and asks the
    server (``ensure_leader``) before it writes a run.
    """
    elected, last_slot = False, None
    while not stop.wait(0.01):
        now_ms = int(time.time() * 1000)
        slot = now_ms - now_ms % INTERVAL_MS
        if slot == last_slot:
            continue
        last_slot = slot
        if trusts_memory:
            elected = elected or election.is_leader()
            leads = elected
        else:
            leads = election.is_leader()
            if leads:
                try:
                    election.ensure_leader()
                except LockError:  # replaced, or the server cannot say: not leading
                    leads = False
        if leads:
            fire_time = utc_at(slot / 1000)
            with sessions.begin() as session:
                session.add_all(JobRun(job=job, fire_time=fire_time, instance=A,
                                       guard="leader", outcome="done") for job in JOBS)


def runs_between(sessions, start: float, end: float) -> dict[str, set[datetime]]:
    """Who ran jobs at which fire times between ``start`` and ``end`` (wall clock)."""
    moment = [utc_at(t) for t in (start, end)]
    with sessions.begin() as session:
        rows = session.execute(select(JobRun.instance, JobRun.fire_time)
                               .where(JobRun.fire_time >= moment[0],
                                      JobRun.fire_time < moment[1])).all()
    ran: dict[str, set[datetime]] = {}
    for instance, fire_time in rows:
        ran.setdefault(instance, set()).add(fire_time)
    return ran


def describe(ran: dict[str, set[datetime]]) -> str:
    both = ran.get(A, set()) & ran.get("shop-1", set())
    return _("fire times run by A: %(a)s, by shop-1: %(shop)s, by both: %(both)s",
             a=len(ran.get(A, ())), shop=len(ran.get("shop-1", ())), both=len(both))


def stage_partitioned_leader(run) -> None:
    lan = run.parts.network()
    with ZooKeeperServer(run.parts.folder("servers"), "zookeeper",
                         host=lan.host("zookeeper")) as server:
        for half, how, trusts_memory in (
                ("broken", _("A runs the jobs from the moment it is elected"), True),
                ("fix", _("A runs them only while it is connected and leads (Curator: "
                          "SUSPENDED means stop), and asks the server before it writes"),
                 False)):
            getattr(run, half)(_("leader election"), how)
            _half(run, lan, server, half, trusts_memory)


def _half(run, lan, server, half: str, trusts_memory: bool) -> None:
    folder = run.parts.folder(f"{run.lab.name}-{half}")
    config = Config(database_url=f"sqlite:///{folder / 'shop.db'}", zk_hosts=server.address,
                    lock_lease_ms=SESSION_MS, job_interval_ms=0)
    factory = run.open_locks("zk_fair", zk_hosts=server.address, lease_ms=SESSION_MS)
    election = LeaderElection(factory, "jobs").start()  # the shop's own election
    stop = threading.Event()
    with Cluster(config, instances=1, runtime_dir=folder, network=lan) as cluster:
        engine = make_engine(cluster.config.database_url)
        sessions = make_sessions(engine)
        scheduler = threading.Thread(target=a_schedules, args=(election, sessions),
                                     kwargs={"trusts_memory": trusts_memory, "stop": stop},
                                     daemon=True)
        try:
            deadline = time.monotonic() + 10
            while not election.is_leader() and time.monotonic() < deadline:
                time.sleep(0.05)
            scheduler.start()
            ShopClient(cluster.urls[0]).set_settings(
                strategy="none", job_guard="leader", job_interval_ms=INTERVAL_MS)
            start = time.time()
            time.sleep(2.0)
            before = runs_between(sessions, start, time.time())
            run.check(_("A is elected first; shop-1 stands behind it; the jobs fire every "
                        "%(interval)s ms for 2 s", interval=INTERVAL_MS),
                      expected=_("A leads and runs every fire time; shop-1 runs none"),
                      observed=describe(before),
                      agrees=len(before.get(A, ())) >= 3 and "shop-1" not in before)
            cut = time.time()
            lan.partition(["machine"], ["zookeeper"], one_way=True)  # what A sends is lost
            time.sleep(CUT_S)
            lan.heal()
            during = runs_between(sessions, cut, time.time())
            both = during.get(A, set()) & during.get("shop-1", set())
            action = _("A's link to ZooKeeper is cut for %(cut)s s (session: %(session)s "
                       "ms); A still reaches the database", cut=f"{CUT_S:g}",
                       session=SESSION_MS)
            if half == "broken":
                run.check(action, expected=_("A cannot hear that its session expired, and "
                                             "goes on leading; ZooKeeper elects shop-1, which "
                                             "leads too: fire times run twice"),
                          observed=describe(during), agrees=len(both) > 0)
            else:
                run.check(action, expected=_("A stops at once (the server does not answer its "
                                             "question, and its connection is soon "
                                             "SUSPENDED); shop-1 is elected once A's session "
                                             "expires: no fire time runs twice"),
                          observed=describe(during),
                          agrees=not both and len(during.get("shop-1", ())) > 0)
        finally:
            stop.set()
            if scheduler.is_alive():
                scheduler.join(5)
            election.stop()
            lan.heal()
            engine.dispose()


LABS = (
    Lab("C48", "partitioned_leader", N_("A leader cut off from ZooKeeper goes on running jobs "
        "while another is elected, unless it stops leading when its connection is suspended"),
        (), ("zookeeper", "hosts"), 20, stage_partitioned_leader),
)
