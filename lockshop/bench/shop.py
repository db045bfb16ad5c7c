"""``lockshop bench shop``: what the shop itself costs per order, beside what its locks cost.

The point of lockshop's numbers is to show what each strategy costs. That only
works if the shop around the lock costs less than the lock: if an order spends
2 ms in the web framework and the ORM, a 0.3 ms Redis round trip disappears.
This benchmark measures the shop's own cost, in one run, on instances of its
own (SQLite, no business delay, one product with stock enough never to sell
out, so that every order does the whole read-check-write):

* **the HTTP floor**: ``GET /api/health``, the cheapest answer an instance gives;
* **per strategy**: one order at a time on one connection (the median), and
  orders per second under a closed loop of ``connections`` on one instance
  and on all of them.

The load is ``lockshop.bench.http_load`` (asyncio, raw HTTP/1.1, keep-alive):
it costs a sixth of the cheapest answer, so the shop, not the client, is
what runs out of CPU. Targets are ratios of figures from this same run,
never wall-clock limits; they are printed with each verdict.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from lockshop.bench.http_load import Call, Load, one_at_a_time, run_load
from lockshop.bench.output import say, write_json
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.servers import own_servers
from lockshop.table import format_table
from shop.i18n import N_, _
from lockshop.workshop.runs import usable
from shop.config import Config, locks_backends
from shop.orders.order_strategies import Strategies

DEFAULT_STRATEGIES = ("none", "atomic", "for_update", "optimistic", "local", "table", "redis",
                      "redis_fair", "redlock", "zk_fair")
FLOOR = "GET /api/health"
HEALTH = Call("GET", "/api/health")
ORDER = Call("POST", "/api/orders", {"product_id": 1, "quantity": 1})
#: Enough that no run sells out.
STOCK = 1_000_000

#: (what, the limit, how to read it): checked on every run.
TARGETS = (
    (N_("atomic orders/s on one instance / the floor's requests/s"), 0.5, "at least"),
    (N_("atomic, one order at a time / one health check"), 2.5, "at most"),
    (N_("redis - atomic, one order at a time (ms)"), 1.0, "at most"),
)
#: How a target's limit and outcome are said (the JSON keeps them as they are).
SENSES = {"at least": N_("at least"), "at most": N_("at most")}
OUTCOMES = {True: N_("met"), False: N_("NOT met"), None: N_("not measured")}


@dataclass(frozen=True)
class ShopFigures:
    measure: str          # FLOOR, or a strategy's name
    one_at_a_time_ms: float
    per_second_one: float
    per_second_all: float
    refused: int          # answers other than 200/201, over the loaded runs
    correct: bool | None  # the audit after the strategy's runs (None for the floor)


def bench_shop(config: Config, *, strategies: list[str] | None = None, instances: int = 3,
               connections: int = 16, seconds: float = 3.0, output: Path) -> list[ShopFigures]:
    with tempfile.TemporaryDirectory(prefix="lockshop-bench-shop-",
                                     ignore_cleanup_errors=True) as folder, ExitStack() as stack:
        runtime = Path(folder)
        config = replace(config, database_url=f"sqlite:///{runtime / 'shop.db'}",
                         business_delay_ms=0)
        config = stack.enter_context(own_servers(config, runtime)).config
        names = _usable(config, strategies or list(DEFAULT_STRATEGIES))
        cluster = stack.enter_context(Cluster(config, instances=instances,
                                              runtime_dir=runtime / "instances"))
        admin = ShopClient(cluster.urls[0], config.admin_token)
        figures = [_measure(FLOOR, HEALTH, cluster.urls, connections, seconds)]
        for name in names:
            admin.reset([{"sku": "bench", "stock": STOCK}])
            admin.set_settings(strategy=name, business_delay_ms=0)
            row = _measure(name, ORDER, cluster.urls, connections, seconds)
            figures.append(replace(row, correct=admin.audit()["correct"]))
    verdicts = judge(figures)
    _report(figures, verdicts, output, instances=instances, connections=connections,
            seconds=seconds)
    return figures


def _usable(config: Config, names: list[str]) -> list[str]:
    strategies = Strategies(locks_backends(config), "sqlite")
    try:
        for name in [n for n in names if not usable(strategies, n)]:
            say(_("%(name)s: skipped, it needs another database", name=name))
        return [n for n in names if usable(strategies, n)]
    finally:
        strategies.close()


def _measure(what: str, call: Call, urls: list[str], connections: int,
             seconds: float) -> ShopFigures:
    say(_("%(what)s: one at a time, then %(connections)s connections on one instance and on "
          "%(instances)s…", what=what, connections=connections, instances=len(urls)))
    alone = one_at_a_time(urls[0], call, seconds=seconds)
    on_one = run_load(urls[:1], call, connections=connections, seconds=seconds)
    on_all = run_load(urls, call, connections=connections, seconds=seconds)
    return ShopFigures(what, round(alone.latency_ms(0.5), 3), round(_answered(on_one), 1),
                       round(_answered(on_all), 1), _refused(on_one) + _refused(on_all),
                       None)


def _answered(load: Load) -> float:
    """Successful answers per second: a refusal is not an order."""
    return (load.ok(200) + load.ok(201)) / load.seconds


def _refused(load: Load) -> int:
    return load.answers - load.ok(200) - load.ok(201)


def judge(figures: list[ShopFigures]) -> list[dict]:
    """Each target: the figure this run measured, and whether it is met."""
    by_name = {f.measure: f for f in figures}
    floor, atomic, redis = by_name[FLOOR], by_name.get("atomic"), by_name.get("redis")
    measured = (
        atomic and atomic.per_second_one / floor.per_second_one,
        atomic and atomic.one_at_a_time_ms / floor.one_at_a_time_ms,
        atomic and redis and redis.one_at_a_time_ms - atomic.one_at_a_time_ms,
    )
    verdicts = []
    for (what, limit, sense), value in zip(TARGETS, measured, strict=True):
        met = None if value is None else (value >= limit if sense == "at least"
                                          else value <= limit)
        verdicts.append({"target": what, "limit": f"{sense} {limit}",
                         "measured": None if value is None else round(value, 2), "met": met})
    return verdicts


def _report(figures: list[ShopFigures], verdicts: list[dict], output: Path, **settings) -> None:
    print()
    print(format_table(
        (_("measure"), _("one at a time ms"), _("per s, 1 instance"),
         _("per s, %(instances)s instances", instances=settings["instances"]), _("refused"),
         _("audit")),
        [(f.measure, f"{f.one_at_a_time_ms:.2f}", f.per_second_one, f.per_second_all, f.refused,
          "-" if f.correct is None else _("correct") if f.correct else _("NOT correct"))
         for f in figures]))
    print()
    for (what, limit, sense), verdict in zip(TARGETS, verdicts, strict=True):
        print(_("%(target)s: %(measured)s (%(sense)s %(limit)s): %(outcome)s", target=_(what),
                measured=verdict["measured"], sense=_(SENSES[sense]), limit=limit,
                outcome=_(OUTCOMES[verdict["met"]])))
    write_json(output, {
        "benchmark": "the shop's own cost per order", "settings": settings,
        "load": "lockshop.bench.http_load: asyncio, raw HTTP/1.1, keep-alive, closed loop",
        "figures": [asdict(f) for f in figures], "targets": verdicts})
    print(_("written to %(file)s", file=output))
