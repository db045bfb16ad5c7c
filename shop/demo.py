"""The main job: one flash sale per strategy, then one table of what happened.

For every strategy (``local`` twice: on one instance and on all of them) the
demo resets the catalogue, switches the cluster to the strategy, runs Locust
headless for a fixed time against the instances, and reads the audit. Every
figure in the table except requests/s and latency comes from the audit, that
is, from the database.
"""

from __future__ import annotations

import secrets
import shutil
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from loadtest.runner import run_locust

from .client import ShopClient
from .config import DEFAULT_DATABASE_URL, Config, locks_backends
from .db import backend_name
from .launcher import Cluster
from .processes import StartError
from .scratch import scratch_database, server_error
from .strategies import ShopStrategy, Strategies
from .table import format_table

#: Enough stock that the correct strategies are still selling when the run
#: is half over, so their throughput is measured while they work.
DEMO_CATALOGUE = [
    {"sku": "keyboard", "name": "Mechanical keyboard", "kind": "item", "stock": 150},
    {"sku": "mug", "name": "Lockshop mug", "kind": "item", "stock": 150},
    {"sku": "concert", "name": "Concert, rows A-F", "kind": "ticket", "seats": 60},
]


@dataclass(frozen=True)
class DemoRun:
    strategy: ShopStrategy
    instances: int

    @property
    def expected_correct(self) -> bool:
        return self.strategy.expected_correct(self.instances)


def demo_plan(strategies: Strategies, instances: int, names: list[str] | None) -> list[DemoRun]:
    """A run per strategy (``local`` twice); by default only those usable on this database."""
    if names:
        for name in names:
            strategies.refuse_unusable(name)  # also UnknownStrategy for a typo
        chosen = [strategies.get(n) for n in names]
    else:
        chosen = [s for s in map(strategies.get, strategies.names()) if _usable(strategies, s)]
    runs = []
    for strategy in chosen:
        if strategy.correct_within_one_process is not None and instances > 1:
            runs.append(DemoRun(strategy, 1))  # the in-process lock, where it works
        runs.append(DemoRun(strategy, instances))
    return runs


def _usable(strategies: Strategies, strategy: ShopStrategy) -> bool:
    try:
        strategies.refuse_unusable(strategy.name)
        return True
    except Exception:  # noqa: BLE001 - the reason is printed by the caller
        return False


def run_demo(config: Config, *, instances: int = 3, users: int = 24, run_time_s: int = 8,
             business_delay_ms: int = 20, strategies: list[str] | None = None,
             keep: bool = False, server_admin_url: str | None = None) -> int:
    """Run the demo; on a scratch database of ``server_admin_url``'s server when given."""
    runtime = Path(tempfile.mkdtemp(prefix="lockshop-demo-"))
    with ExitStack() as stack:
        if server_admin_url:
            problem = server_error(server_admin_url)
            if problem:
                raise StartError(f"cannot use the database server: {problem}")
            url = stack.enter_context(scratch_database(server_admin_url, "lockshop_demo"))
            config = replace(config, database_url=url)
        elif config.database_url == DEFAULT_DATABASE_URL:
            # A fresh database of its own: the demo never touches the user's shop.
            config = replace(config, database_url=f"sqlite:///{runtime / 'demo.db'}")
        config = replace(config, admin_token=config.admin_token or secrets.token_urlsafe(16))
        return _run(config, runtime, instances, users, run_time_s, business_delay_ms,
                    strategies, keep)


def _run(config: Config, runtime: Path, instances: int, users: int, run_time_s: int,
         business_delay_ms: int, strategies: list[str] | None, keep: bool) -> int:
    catalogue = Strategies(locks_backends(config), backend_name(config.database_url))
    plan = demo_plan(catalogue, instances, strategies)
    skipped = [n for n in catalogue.names() if n not in {r.strategy.name for r in plan}]
    rows = []
    try:
        with Cluster(config, instances=instances, runtime_dir=runtime) as cluster:
            admin = ShopClient(cluster.urls[0], config.admin_token)
            _say(f"{instances} instances up on {catalogue.database}: {', '.join(cluster.urls)}; "
                 f"{len(plan)} runs of {run_time_s}s with {users} Locust users, "
                 f"business delay {business_delay_ms} ms")
            for number, run in enumerate(plan, start=1):
                _say(f"[{number}/{len(plan)}] {run.strategy.name} on {run.instances} instance(s)…")
                admin.reset(DEMO_CATALOGUE)
                admin.set_settings(strategy=run.strategy.name, business_delay_ms=business_delay_ms)
                result = run_locust(
                    cluster.urls[:run.instances], users=users, run_time_s=run_time_s,
                    admin_token=config.admin_token,
                    csv_prefix=runtime / f"{number:02d}-{run.strategy.name}-{run.instances}")
                rows.append(_row(run, admin.audit(), result))
    finally:
        if keep:
            _say(f"kept {runtime} (instance logs, Locust CSV)")
        else:
            shutil.rmtree(runtime, ignore_errors=True)
    print()
    print(format_table(HEADERS, rows))
    print()
    surprises = [row for row in rows if row[-2] != row[-1]]
    for row in surprises:
        print(f"UNEXPECTED: {row[0]} on {row[1]} instance(s) was {row[-2]}, expected {row[-1]}")
    if not surprises:
        print("Every strategy behaved as the catalogue says.")
    if skipped and not strategies:
        print(f"Not run on {catalogue.database}: {', '.join(skipped)} "
              "(see 'lockshop strategies' for what each needs).")
    return 1 if surprises else 0


HEADERS = ("strategy", "instances", "orders", "sold", "remaining", "oversold", "lost updates",
           "double-booked", "retries", "stale", "req/s", "p95 ms", "audit", "expected")


def _row(run: DemoRun, audit: dict, result) -> tuple:
    """One line of the table; the last two cells say what happened and what should have."""
    totals = audit["totals"]
    return (run.strategy.name, run.instances, totals["orders"], totals["sold"],
            totals["remaining"], totals["oversold"], totals["lost_updates"],
            totals["double_booked_seats"], totals["retries"], totals["stale_writes_rejected"],
            result.requests_per_second, round(result.p95_ms),
            "correct" if audit["correct"] else "WRONG",
            "correct" if run.expected_correct else "WRONG")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
