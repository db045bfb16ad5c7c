"""Benchmarks that go through the whole shop: orders per second per strategy.

``lockshop bench database`` runs every database strategy (and ``none``, the
unguarded ceiling) on every database it can reach, with several instances,
in two layouts:

* ``hot``: one product that every buyer wants: a lock per product gives no
  parallelism at all;
* ``ten``: ten products, buyers spread over them: a lock per product lets
  different products sell side by side, which is the gain to show.

Stock is large enough that nothing sells out: every order does the full
read-check-write. Figures are printed and written as JSON; they are never
asserted in tests (a busy machine would make such a test flake).
"""

from __future__ import annotations

import shutil
import tempfile
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from loadtest.runner import run_locust
from lockshop.bench.output import say, write_json
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.scratch import scratch_database, server_error
from lockshop.table import format_table
from shop.i18n import N_, _
from lockshop.workshop.runs import usable
from shop.config import Config, locks_backends
from shop.orders.order_strategies import Strategies

LAYOUTS = {
    "hot": [{"sku": "hot", "stock": 1_000_000}],
    "ten": [{"sku": f"p{i}", "stock": 1_000_000} for i in range(10)],
}
DATABASE_FAMILIES = ("database", "lock-free")


@dataclass(frozen=True)
class BenchRow:
    database: str
    strategy: str
    layout: str
    orders: int
    orders_per_s: float
    p50_ms: float
    p95_ms: float
    failed_requests: int
    correct: bool


def bench_database(config: Config, *, databases: list[str], servers: dict[str, str],
                   strategies: list[str] | None = None, instances: int = 3, users: int = 24, run_time_s: int = 6,
                   business_delay_ms: int = 0, output: Path) -> list[BenchRow]:
    rows: list[BenchRow] = []
    runtime = Path(tempfile.mkdtemp(prefix="lockshop-bench-"))
    try:
        for database in databases:
            with ExitStack() as stack:
                url = _database_url(database, servers, runtime, stack)
                if url is None:
                    continue
                rows += _bench_one_database(replace(config, database_url=url), database,
                                            strategies, instances, users, run_time_s,
                                            business_delay_ms, runtime / database)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    write_json(output, {
        "benchmark": "orders per second through the shop",
        "settings": {"instances": instances, "users": users, "run_time_s": run_time_s,
                     "business_delay_ms": business_delay_ms},
        "rows": [asdict(r) for r in rows]})
    print()
    print(format_table(
        [_(c) for c in (N_("database"), N_("strategy"), N_("layout"), N_("orders"),
                        N_("orders/s"), N_("p50 ms"), N_("p95 ms"), N_("failed"), N_("audit"))],
        [(r.database, r.strategy, r.layout, r.orders, r.orders_per_s, round(r.p50_ms),
          round(r.p95_ms), r.failed_requests, _("correct") if r.correct else _("NOT correct"))
         for r in rows]))
    print("\n" + _("written to %(file)s", file=output))
    return rows


def _database_url(database: str, servers: dict[str, str], runtime: Path,
                  stack: ExitStack) -> str | None:
    if database == "sqlite":
        runtime.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{runtime / 'bench.db'}"
    admin_url = servers[database]
    problem = server_error(admin_url)
    if problem:
        say(_("%(database)s: skipped, the server is not usable (%(problem)s)",
              database=database, problem=problem))
        return None
    return stack.enter_context(scratch_database(admin_url, "lockshop_bench"))


def _bench_one_database(config: Config, database: str, chosen: list[str] | None,
                        instances: int, users: int, run_time_s: int, business_delay_ms: int,
                        runtime: Path) -> list[BenchRow]:
    strategies = Strategies(locks_backends(config), database)
    names = chosen or ["none"] + [n for n in strategies.names()
                                  if strategies.get(n).family in DATABASE_FAMILIES]
    skipped = [n for n in names if not usable(strategies, n)]
    for name in skipped:
        say(_("%(database)s: %(name)s skipped, it needs another database", database=database,
              name=name))
    names = [n for n in names if n not in skipped]
    rows = []
    with Cluster(config, instances=instances, runtime_dir=runtime) as cluster:
        admin = ShopClient(cluster.urls[0], config.admin_token)
        for name in names:
            for layout, products in LAYOUTS.items():
                say(_("%(database)s: %(name)s, %(layout)s…", database=database, name=name,
                      layout=layout))
                admin.reset(products)
                admin.set_settings(strategy=name, business_delay_ms=business_delay_ms)
                result = run_locust(cluster.urls, users=users, run_time_s=run_time_s,
                                    admin_token=config.admin_token or "",
                                    csv_prefix=runtime / f"{name}-{layout}")
                audit = admin.audit()
                orders = audit["totals"]["orders"]
                # Every user starts at once, so the run time is the measuring window.
                rows.append(BenchRow(database, name, layout, orders,
                                     round(orders / run_time_s, 1),
                                     result.p50_ms, result.p95_ms, result.failures,
                                     audit["correct"]))
    return rows

