"""The soak: each correct strategy under load for minutes, with faults drawn from a seed.

Labs and tests force one race at a time; a soak asks whether anything else
goes wrong when faults keep coming. Per strategy, on hosts of this machine
(``lockshop.cluster.network``: each instance and lock server in a namespace
of its own):

1. three instances on a fresh database (SQLite, or PostgreSQL on a host of
   its own, which ``pg_advisory`` needs); buyers that send an Idempotency-Key
   with every order and retry timeouts and 503s with it (``buyers``);
2. a seeded schedule of partitions, slow links, pauses, kills and server
   restarts, one at a time (``faults``);
3. afterwards, everything healed: the database's audit (oversold, lost
   updates, seats booked twice), the overlap audit of every instance's holds
   (two holders at once, and whether both wrote), duplicate orders (a key
   answered with two ids, or an order in the database without its key), and
   the 5xx answers other than 503.

Not a CI step: ``lockshop soak --minutes 10`` runs for ten minutes per
strategy. The holds of a killed process die with it: the soak reads every
instance's holds just before each kill, and counts a hold still open then as
ended by the kill.
"""

from __future__ import annotations

import secrets
import tempfile
import threading
import time
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from sqlalchemy import func, select

from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.network import Network
from lockshop.cluster.postgres_servers import PostgresServer, postgres_unavailable
from lockshop.cluster.processes import StartError
from shop.i18n import N_, _
from lockshop.cluster.scratch import scratch_database
from lockshop.cluster.servers import own_servers
from lockshop.cluster.hold_logs import collect_holds, overlap_audit, overlaps
from lockshop.soak.buyers import Tally, buy
from lockshop.soak.faults import Fault, Injector, schedule
from lockshop.table import format_table
from lockshop.workshop.runs import usable
from shop.config import Config, locks_backends
from shop.orders.order_strategies import Strategies
from shop.store.db import backend_name, make_engine
from shop.store.models import Order, OrderKey

INSTANCES = ("shop-1", "shop-2", "shop-3")
LEASE_MS = 2000  # Redis leases and ZooKeeper sessions: short, so faults outlast them
PRODUCTS = (
    {"sku": "mug", "name": "Lockshop mug", "kind": "item", "stock": 300},
    {"sku": "keyboard", "name": "Mechanical keyboard", "kind": "item", "stock": 1_000_000},
    {"sku": "concert", "name": "Concert, rows A-J", "kind": "ticket", "seats": 200},
)
#: What the buyers ask for: the mug and the concert sell out early (then every order
#: is a sold-out check under the lock), the keyboard never does.
CHOICES = (1, 2, 2, 3)
HOLDS_EVERY_S = 15
#: The host of the soak's own PostgreSQL server, where a strategy soaks on PostgreSQL.
DATABASE_HOST = "postgres"


@dataclass
class SoakResult:
    strategy: str
    seconds: float
    faults: list[Fault]
    tally: Tally
    audit: dict
    overlaps: dict
    unkeyed_orders: int  # orders in the database beyond one per key

    @property
    def duplicate_orders(self) -> int:
        return self.tally.duplicates_seen + self.unkeyed_orders

    @property
    def correct(self) -> bool:
        totals = self.audit["totals"]
        return (self.audit["correct"] and self.overlaps["both_wrote"] == 0
                and self.duplicate_orders == 0 and self.tally.server_errors == 0
                and totals["oversold"] == 0 and totals["lost_updates"] == 0)

    def row(self) -> list:
        totals, answers = self.audit["totals"], self.tally.answers
        overlaps_shown = (self.overlaps["overlaps"] if self.overlaps["complete"]
                          else f"{self.overlaps['overlaps']}?")
        jobs = self.audit["jobs"]
        return [self.strategy, self.tally.orders, len(self.faults), overlaps_shown,
                self.overlaps["both_wrote"], self.overlaps["interleaved"],
                totals["stale_writes_rejected"], totals["oversold"],
                totals["lost_updates"], totals["double_booked_seats"], self.duplicate_orders,
                self.tally.server_errors, answers["503"], answers["no answer"],
                jobs["duplicate_runs"], jobs["stock_restored_more_than_once"],
                _("yes") if self.correct else _("NO")]

    def as_dict(self) -> dict:
        return {"strategy": self.strategy, "seconds": self.seconds,
                "faults": [f.describe().strip() for f in self.faults],
                "answers": dict(self.tally.answers), "orders": self.tally.orders,
                "abandoned": self.tally.abandoned, "audit_totals": self.audit["totals"],
                "jobs": self.audit["jobs"], "overlaps": {k: v for k, v in self.overlaps.items()
                                                         if k != "locks"},
                "duplicate_orders": self.duplicate_orders, "correct": self.correct}


HEADERS = [N_("strategy"), N_("orders"), N_("faults"), N_("overlaps"), N_("both wrote"),
           N_("interleaved"), N_("stale refused"), N_("oversold"), N_("lost updates"),
           N_("seats twice"), N_("duplicate orders"), N_("5xx not 503"), N_("503s"),
           N_("no answer"), N_("job runs twice"), N_("stock restored twice"),
           N_("orders correct")]


def lock_hosts(strategy: str, family: str) -> list[str]:
    """The hosts of the strategy's lock service (empty: the database is the lock)."""
    if strategy == "redlock":
        return [f"redlock-{n}" for n in range(1, 6)]
    return {"redis": ["redis"], "zookeeper": ["zookeeper"]}.get(family, [])


def soak_strategies(strategies: Strategies, say=print) -> list[str]:
    """Every strategy that is correct across instances and can run here: on SQLite,
    or on a PostgreSQL server of the soak's own where one can start."""
    chosen = []
    for name in strategies.names():
        if not strategies.get(name).correct_across_instances:
            continue
        if needs_postgresql(strategies, name):
            problem = postgres_unavailable()
            if problem:
                say(_("%(name)s left out: it needs PostgreSQL, and %(problem)s", name=name,
                      problem=problem))
                continue
            chosen.append(name)
        elif usable(strategies, name) and strategies.available(name):
            chosen.append(name)
    return chosen


def run_soak(names: list[str] | None, *, minutes: float, seed: int, buyers: int,
             database: str = "sqlite", say=print) -> list[SoakResult]:
    """Soak each of ``names`` (default: every correct strategy that runs here) in turn.

    ``database``: "sqlite" (a file per strategy) or "postgresql" (a database per
    strategy on a PostgreSQL server of the soak's own, on a host the faults may cut
    instances off from, and restart). A strategy that needs PostgreSQL
    (``pg_advisory``) soaks there either way.
    """
    runtime = Path(tempfile.mkdtemp(prefix="lockshop-soak-"))
    results = []
    with ExitStack() as stack:
        lan = stack.enter_context(Network())
        servers = stack.enter_context(own_servers(Config(), runtime, lan))
        # Which strategies can run: each strategy soaks on a database of its own, and
        # this one only answers for the lock services (the table lock needs a database).
        probe = replace(servers.config, database_url=f"sqlite:///{runtime / 'probe.db'}")
        strategies = Strategies(locks_backends(probe), "sqlite")
        stack.callback(strategies.close)
        for name in names or ():
            strategies.get(name)  # UnknownStrategy for a typo, before any soak
        postgres: PostgresServer | None = None
        for name in names or soak_strategies(strategies, say):
            on_postgres = database == "postgresql" or needs_postgresql(strategies, name)
            if on_postgres and postgres is None:
                problem = postgres_unavailable()
                if problem:
                    raise StartError(_("%(name)s soaks on PostgreSQL, which cannot run "
                                       "here: %(problem)s", name=name, problem=problem))
                postgres = stack.enter_context(PostgresServer(host=lan.host(DATABASE_HOST)))
                servers.started[DATABASE_HOST] = postgres
            hosts = fault_hosts(name, strategies.get(name).family, on_postgres)
            with (scratch_database(postgres.admin_url, f"soak_{name}") if on_postgres
                  else nullcontext(f"sqlite:///{runtime / name / 'shop.db'}")) as url:
                results.append(soak_one(name, hosts, servers, lan, runtime / name, url,
                                        minutes * 60, seed, buyers, say))
            lan.heal()
    say("\n" + _("runtime (logs, databases): %(folder)s", folder=runtime))
    return results


def needs_postgresql(strategies: Strategies, name: str) -> bool:
    return "postgresql" in strategies.get(name).requires


def fault_hosts(strategy: str, family: str, on_postgres: bool) -> list[str]:
    """The hosts an instance may be cut off from, and whose server may be restarted:
    the lock service's, and the database's when it is a server on a host."""
    return lock_hosts(strategy, family) + ([DATABASE_HOST] if on_postgres else [])


def soak_one(strategy: str, hosts: list[str], servers, lan: Network, folder: Path,
             database_url: str, seconds: float, seed: int, buyers: int, say) -> SoakResult:
    folder.mkdir(parents=True)
    token = secrets.token_urlsafe(16)
    config = replace(servers.config, database_url=database_url,
                     admin_token=token, lock_lease_ms=LEASE_MS)
    faults = schedule(seed, seconds, list(INSTANCES), hosts)
    say(_("%(strategy)s: %(minutes)s min, %(buyers)s buyers, %(faults)s faults (seed %(seed)s), "
          "on %(database)s", strategy=strategy, minutes=f"{seconds / 60:g}", buyers=buyers,
          faults=len(faults), seed=seed, database=backend_name(database_url)))
    with Cluster(config, instances=len(INSTANCES), runtime_dir=folder, network=lan) as cluster:
        urls = cluster.urls
        admin = ShopClient(urls[0], token)
        admin.reset(list(PRODUCTS))
        admin.set_settings(strategy=strategy, business_delay_ms=20, job_guard="strategy",
                           job_interval_ms=1000)
        tally, stop = Tally(), threading.Event()
        hold_collector = HoldsCollector({i.name: i.url for i in cluster.instances}, time.time())
        threads = [threading.Thread(target=buy, args=(urls, list(CHOICES), tally, stop, seed + n),
                                    daemon=True) for n in range(buyers)]
        threads.append(threading.Thread(target=hold_collector.run, args=(stop,), daemon=True))
        started = time.monotonic()
        for thread in threads:
            thread.start()
        injector = Injector(cluster, lan, {n: servers.started[n] for n in hosts}, hosts,
                            before_kill=hold_collector.collect)
        try:
            injector.run(faults, started, say)
            time.sleep(max(0.0, started + seconds - time.monotonic()))
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)
        elapsed = time.monotonic() - started
        time.sleep(LEASE_MS / 1000)  # holds still open (a job, a stale holder) end
        audit = admin.audit()
        overlaps_found = hold_collector.audit(killed=injector.killed)
    result = SoakResult(strategy, round(elapsed, 1), faults, tally, audit, overlaps_found,
                        unkeyed_orders(database_url))
    say(format_table([_(h) for h in HEADERS], [result.row()]) + "\n")
    return result


def unkeyed_orders(database_url: str) -> int:
    """Orders beyond one per Idempotency-Key: every soak order has a key, so any such
    order was made twice."""
    engine = make_engine(database_url)
    try:
        with engine.connect() as db:
            orders = db.scalar(select(func.count()).select_from(Order))
            keys = db.scalar(select(func.count()).select_from(OrderKey))
        return orders - keys
    finally:
        engine.dispose()


@dataclass
class HoldsCollector:
    """Every instance's holds, asked for every few seconds: an instance's log is
    bounded and dies with its process, so a soak cannot ask only at the end."""

    instances: dict[str, str]
    since: float
    #: (instance, pid, hold id) -> the latest record of that hold.
    holds: dict[tuple, dict] = field(default_factory=dict)
    complete: bool = True
    _asked: dict[tuple, tuple[float, int]] = field(default_factory=dict)  # (name, pid)
    _collecting: threading.Lock = field(default_factory=threading.Lock)

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(HOLDS_EVERY_S):
            self.collect()

    def collect(self) -> None:
        with self._collecting:  # from its own thread, and before each kill
            self._collect()

    def _collect(self) -> None:
        asked_at = time.time()
        found = collect_holds(self.instances, max(self.since, asked_at - 4 * HOLDS_EVERY_S),
                              labs=False, timeout=5)
        for source in found["sources"]:
            if "problem" in source:
                continue  # paused or restarting: the next round asks again
            known = (source["name"], source["pid"])
            last_at, last_forgotten = self._asked.get(known, (self.since, 0))
            oldest = min((h["acquired"] for h in source["holds"]), default=asked_at)
            if source["forgotten"] > last_forgotten and oldest > last_at:
                self.complete = False  # it forgot holds we never saw
            self._asked[known] = (asked_at, source["forgotten"])
            for hold in source["holds"]:
                self.holds[(source["name"], source["pid"], hold["id"])] = hold

    def audit(self, killed: list[tuple[str, float]] = ()) -> dict:
        """The overlap audit, and each pair of holds that both wrote, in full: what a
        reader needs to work out how the two got in.

        ``killed``: (instance, when) of each kill. A hold its process still had open
        then ended with it; left open, it would overlap every later hold of its lock.
        """
        self.collect()
        by_source: dict[str, list[dict]] = {}
        for (name, pid, hold_id), hold in self.holds.items():
            if hold["acquired"] >= self.since:
                if hold["released"] is None:
                    hold = dict(hold, **_ended_by_a_kill(name, hold["acquired"], killed))
                # A restarted instance numbers its holds from 1 again: keep them apart.
                by_source.setdefault(name, []).append(dict(hold, id=f"{pid}:{hold_id}"))
        sources = [{"name": name, "holds": holds} for name, holds in by_source.items()]
        pairs = overlaps(sources, time.time())
        found = overlap_audit({"sources": sources, "overlaps": pairs})
        held = {(source["name"], hold["id"]): hold for source in sources
                for hold in source["holds"]}
        both_wrote = [dict(pair, holds=[dict(held[(h["source"], h["id"])], source=h["source"])
                                        for h in pair["holds"]])
                      for pair in pairs if pair["both_wrote"]]
        # The faults' times count from ``since`` (the wall clock, as the holds' times).
        return dict(found, complete=found["complete"] and self.complete, since=self.since,
                    both_wrote_pairs=both_wrote)


def _ended_by_a_kill(instance: str, acquired: float, killed: list[tuple[str, float]]) -> dict:
    """The first kill of ``instance`` after ``acquired`` ended a hold left open, if any."""
    for name, at in killed:
        if name == instance and at >= acquired:
            return {"released": at, "ended": "killed"}
    return {}


def print_table(results: list[SoakResult], say=print) -> None:
    say(format_table([_(h) for h in HEADERS], [r.row() for r in results]))
