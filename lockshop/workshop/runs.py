"""One load run per strategy: what the demo and the report both do.

A run resets the products, switches the cluster to the strategy, runs a
Locust scenario headless against some of the instances, and reads the audit
(the database's truth), the overlap audit (every instance's own record of
its holds: two holders of one lock at once, and whether both wrote) and the
instances' ``/metrics`` (the cost in lock waits), before and after, so that
each run is measured on its own.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from loadtest.runner import LocustResult, run_locust
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.processes import StartError
from lockshop.cluster.scratch import scratch_database, server_error
from lockshop.cluster.servers import own_servers
from lockshop.cluster.hold_logs import begun_since, collect_holds, overlap_audit
from shop.config import DEFAULT_DATABASE_URL, Config, locks_backends
from shop.errors import Unprocessable
from shop.i18n import _, lazy_gettext
from shop.orders.order_strategies import ShopStrategy, Strategies
from shop.store.db import backend_name


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str  # lazy: said in the language current where it is shown
    locustfile: str
    products: tuple[dict, ...]


FLASH_SALE = Scenario("flash_sale", lazy_gettext("Flash sale"), "flash_sale", (
    {"sku": "keyboard", "name": "Mechanical keyboard", "kind": "item", "stock": 150},
    {"sku": "mug", "name": "Lockshop mug", "kind": "item", "stock": 150},
    {"sku": "concert", "name": "Concert, rows A-F", "kind": "ticket", "seats": 60},
))
SEAT_SALE = Scenario("seat_sale", lazy_gettext("Seat sale"), "seat_sale", (
    {"sku": "arena", "name": "Arena, rows A-J", "kind": "ticket", "seats": 100},
    {"sku": "club", "name": "Club night", "kind": "ticket", "seats": 30},
))


@dataclass(frozen=True)
class PlannedRun:
    strategy: ShopStrategy
    instances: int

    @property
    def expected_correct(self) -> bool:
        return self.strategy.expected_correct(self.instances)


@dataclass(frozen=True)
class RunResult:
    scenario: Scenario
    run: PlannedRun
    audit: dict
    locust: LocustResult
    lock: dict  # wait/hold means and p95s in ms, herd wake-ups, from /metrics
    overlaps: dict  # lockshop.cluster.hold_logs.overlap_audit

    @property
    def correct(self) -> bool:
        """The database's audit is correct, and no two holders of a lock both wrote."""
        return bool(self.audit["correct"]) and self.overlaps["both_wrote"] == 0

    @property
    def sold_anything(self) -> bool:
        """Some order was placed: a run without one shows no race, so it proves nothing
        either way (Locust could not reach the shop, or was never given the time)."""
        return self.audit["totals"]["orders"] > 0

    @property
    def as_expected(self) -> bool:
        return self.sold_anything and self.correct == self.run.expected_correct


def staged_only(strategy) -> bool:
    """Broken on purpose (a "-broken" family): its failure needs a kill, a fault hook, a
    pause or a short lease, not just load; a plain sale would show it correct. Its lab
    stages the failure."""
    return strategy.family.endswith("-broken")


def plan(strategies: Strategies, instances: int, names: list[str] | None) -> list[PlannedRun]:
    """A run per strategy (``local`` twice); by default those that can run here under load."""
    if names:
        for name in names:
            strategies.refuse_unusable(name)  # also UnknownStrategy for a typo
        chosen = [strategies.get(n) for n in names]
    else:
        chosen = [s for s in map(strategies.get, strategies.names())
                  if not staged_only(s) and usable(strategies, s.name)
                  and strategies.available(s.name)]
    runs = []
    for strategy in chosen:
        if strategy.correct_within_one_process is not None and instances > 1:
            runs.append(PlannedRun(strategy, 1))  # the in-process lock, where it works
        runs.append(PlannedRun(strategy, instances))
    return runs


def usable(strategies: Strategies, name: str) -> bool:
    try:
        strategies.refuse_unusable(name)
        return True
    except Unprocessable:  # a strategy for another database
        return False


@contextmanager
def stage(config: Config, runtime: Path, server_admin_url: str | None = None,
          instances: int = 3) -> Iterator[tuple[Cluster, Strategies, Config]]:
    """A cluster on a fresh database of its own (SQLite, or a scratch one on a server)."""
    if server_admin_url:
        problem = server_error(server_admin_url)
        if problem:
            raise StartError(_("cannot use the database server: %(problem)s", problem=problem))
        database = scratch_database(server_admin_url, "lockshop_run")
    else:
        database = nullcontext(config.database_url if config.database_url != DEFAULT_DATABASE_URL
                                else f"sqlite:///{runtime / 'shop.db'}")
    with database as url, own_servers(config, runtime) as servers:
        config = replace(servers.config, database_url=url,
                         admin_token=config.admin_token or secrets.token_urlsafe(16))
        strategies = Strategies(locks_backends(config), backend_name(url))
        try:
            with Cluster(config, instances=instances, runtime_dir=runtime) as cluster:
                yield cluster, strategies, config
        finally:
            strategies.close()  # before its servers stop: no client left reconnecting


def run_sale(cluster: Cluster, config: Config, scenario: Scenario, run: PlannedRun, *,
             users: int, run_time_s: int, business_delay_ms: int, folder: Path,
             html: bool = False) -> RunResult:
    admin = ShopClient(cluster.urls[0], config.admin_token)
    admin.reset(list(scenario.products))
    # The jobs fire every second during the run: the report counts the fire times
    # that ran on more than one instance (nothing expires in so short a run).
    admin.set_settings(strategy=run.strategy.name, business_delay_ms=business_delay_ms,
                       job_guard="strategy", job_interval_ms=1000)
    targets = cluster.urls[:run.instances]
    before = [scrape_lock_metrics(url) for url in targets]
    instances = {i.name: i.url for i in cluster.instances}
    since = time.time()
    forgotten = {s["name"]: s.get("forgotten", 0) for s in
                 collect_holds(instances, since, labs=False, timeout=10)["sources"]}
    folder.mkdir(parents=True, exist_ok=True)
    result = run_locust(targets, locustfile=scenario.locustfile, users=users,
                        run_time_s=run_time_s, admin_token=config.admin_token or "",
                        csv_prefix=folder / "locust",
                        extra_args=("--html", str(folder / "locust.html")) if html else ())
    after = [scrape_lock_metrics(url) for url in targets]
    overlaps = overlap_audit(begun_since(collect_holds(instances, since, labs=False, timeout=30),
                                         since), forgotten)
    return RunResult(scenario, run, admin.audit(), result,
                     lock_figures(before, after, run.strategy.name), overlaps)


# --- lock figures from /metrics -------------------------------------------------------

def scrape_lock_metrics(base_url: str) -> dict:
    """One instance's lock figures from ``/metrics``: (sample, strategy, le) -> value."""
    return parse_lock_metrics(ShopClient(base_url, timeout=10).metrics())


def parse_lock_metrics(text: str) -> dict:
    """``/metrics`` text as (sample, strategy, le or outcome) -> value: the third part is
    a histogram bucket's bound, or an order's outcome ("placed", "SoldOut", ...)."""
    samples: dict[tuple[str, str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, sample.labels.get("strategy", ""),
                     sample.labels.get("le", sample.labels.get("outcome", "")))] = sample.value
    return samples


def lock_figures(before: list[dict], after: list[dict], strategy: str) -> dict:
    """Wait and hold times (mean, p95 bucket bound, in ms) and herd wake-ups over the run."""
    def delta(name: str, le: str = "") -> float:
        return sum(a.get((name, strategy, le), 0.0) - b.get((name, strategy, le), 0.0)
                   for b, a in zip(before, after, strict=True))

    figures = {"herd_wakeups": int(delta("lockshop_lock_herd_wakeups_total"))}
    for kind in ("wait", "hold"):
        metric = f"lockshop_lock_{kind}_seconds"
        count = delta(f"{metric}_count")
        figures[f"{kind}_mean_ms"] = round(1000 * delta(f"{metric}_sum") / count, 2) if count else None
        figures[f"{kind}_p95_ms"] = _p95_bound(after, before, metric, strategy, count)
    return figures


def _p95_bound(after, before, metric: str, strategy: str, count: float) -> float | None:
    """The upper bound of the histogram bucket that holds the 95th percentile."""
    if not count:
        return None
    bounds = sorted({float(le) for (name, s, le) in after[0]
                     if name == f"{metric}_bucket" and s == strategy and le != "+Inf"})
    for bound in bounds:
        le = repr(bound)
        seen = sum(a.get((f"{metric}_bucket", strategy, le), 0.0)
                   - b.get((f"{metric}_bucket", strategy, le), 0.0)
                   for b, a in zip(before, after, strict=True))
        if seen >= 0.95 * count:
            return round(bound * 1000, 2)
    return None  # above the last bucket


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
