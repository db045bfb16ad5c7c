"""Labs of the network between the parts (beyond the articles, after A4's warnings):
a lock holder cut off from its lock service while the rest of the cluster still
reaches it.

Each lab runs on hosts of this machine (``lockshop.cluster.network``): the
lock service on one host, a shop instance on another, and the lab's own
holder A on the machine itself. A takes the lock and reads the stock; then
the link from A to the lock service is cut. A cannot renew, cannot ask, and
cannot know that its lease (or its session) has ended on the server; B, on
the instance that still reaches the service, takes the lock and sells. What
happens to A's late write is the lesson: with nothing but A's belief, it
overwrites B's sale; with the lock's fencing token, it is refused.

Forced, never left to luck: the cut lasts one and a half leases (or
sessions) before B asks, and A writes only after B has sold.
"""

from __future__ import annotations

import time

from locks import LockError
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.redis_servers import RedisServer
from lockshop.cluster.zookeeper_servers import ZooKeeperServer
from lockshop.workshop.staging import steps
from lockshop.workshop.staging.record import Lab
from shop.config import Config
from shop.store.db import make_engine, make_sessions
from shop.i18n import N_, _

LEASE_MS = 1000  # the Redis lease, and the ZooKeeper session's timeout


def check_from_a(lock) -> str:
    """What A learns when it asks whether it still holds the lock."""
    try:
        lock.ensure_held()
        return "still held"
    except LockError as error:
        return type(error).__name__


def _forget(lock) -> None:
    try:
        lock.release()
    except LockError:
        pass  # long gone: the point of the lab


def cut_off(lan, service: str, lock) -> tuple[str, str, bool]:
    """A's link to ``service`` is cut past the lease: (what was done, what A should
    learn when it asks, whether the fault took as planned)."""
    lan.partition(["machine"], [service], one_way=True)
    time.sleep(LEASE_MS * 1.5 / 1000)
    return (_("its link to %(service)s is cut for %(cut)s ms (lease/session: %(lease)s ms)",
              service=service, cut=f"{LEASE_MS * 1.5:g}", lease=LEASE_MS),
            _("A cannot tell whether it still holds the lock; on the server its hold has "
              "ended"), True)


def stage_late_write(run, service: str, server, strategy: str, *, fix: str,
                     fault=cut_off) -> None:
    """The two halves on ``server`` (on its host of ``lan``), with ``strategy``'s locks:
    A takes the lock and reads, ``fault(lan, service, A's lock)`` happens to A's link, B sells,
    A writes late (``fix`` says how the fixed half's A does it)."""
    lan = run.parts.network()
    folder = run.parts.folder(run.lab.name)
    backends = ({"redis_url": server.url} if service == "redis"
                else {"zk_hosts": server.address})
    config = Config(database_url=f"sqlite:///{folder / 'shop.db'}", lock_lease_ms=LEASE_MS,
                    job_interval_ms=0, **backends)
    with Cluster(config, instances=1, runtime_dir=folder, network=lan) as cluster:
        engine = make_engine(cluster.config.database_url)
        sessions = make_sessions(engine)
        admin = ShopClient(cluster.urls[0])
        try:
            for half, how in (("broken", _("A's write trusts A: no fencing token goes with "
                                           "it")),
                              ("fix", fix)):
                getattr(run, half)(strategy, how)
                lan.heal()
                admin.reset([{"sku": "x", "stock": 5}])
                admin.set_settings(strategy=run.version(strategy), business_delay_ms=0,
                                   job_interval_ms=0)
                factory = run.open_locks(strategy, lease_ms=LEASE_MS, **backends)
                a = factory.lock("product:1")
                a.acquire()
                a_read = steps.read(sessions)
                done, expected, as_planned = fault(lan, service, a)
                learned = check_from_a(a)
                run.check(_("A holds the lock and read stock %(read)s; %(done)s", read=a_read,
                            done=done),
                          expected=expected, observed=_("A asks: %(learned)s",
                                                        learned=steps.said(learned)),
                          agrees=as_planned and learned != "still held")
                sold = ShopClient(cluster.urls[0]).order()
                run.check(_("B, on shop-1 (which still reaches the service), orders one "
                            "unit"),
                          expected=_("B gets the lock and sells: stock 4"),
                          observed=_("answered %(answer)s; stock %(stock)s", answer=sold,
                                     stock=steps.read(sessions)),
                          agrees=sold == 201 and steps.read(sessions) == 4)
                steps.late_write(run, sessions, a_read,
                                 a.fencing_token if half == "fix" else None,
                                 action=_("A writes what it computed while it held the "
                                          "lock: stock 4"),
                                 refused=_("A's fencing token is older than B's"))
                lan.heal()
                _forget(a)
        finally:
            engine.dispose()


def stage_redis_partition(run) -> None:
    lan = run.parts.network()
    with RedisServer(run.parts.folder("servers"), "redis", host=lan.host("redis")) as server:
        stage_late_write(run, "redis", server, "redis",
                         fix=_("A's write carries the lock's fencing token"))


def stage_zookeeper_partition(run) -> None:
    lan = run.parts.network()
    with ZooKeeperServer(run.parts.folder("servers"), "zookeeper",
                         host=lan.host("zookeeper")) as server:
        stage_late_write(run, "zookeeper", server, "zk_fair",
                         fix=_("A asks before it commits, and its write carries the lock's "
                               "fencing token (the zxid of its node)"))


LABS = (
    Lab("C45", "redis_partition", N_("A holder cut off from Redis past its lease writes after "
        "another took the lock; the fencing token refuses it"), (), ("redis", "hosts"), 9,
        stage_redis_partition),
    Lab("C46", "zookeeper_partition", N_("A holder cut off from ZooKeeper past its session has "
        "lost its lock; it must check before it commits, and the zxid fences a late write"),
        (), ("zookeeper", "hosts"), 7, stage_zookeeper_partition),
)
