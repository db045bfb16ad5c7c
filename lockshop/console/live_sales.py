"""A live sale from the console: Locust against every instance, sampled once a second.

Each sample holds what a class watches grow: the stock left, the orders each
instance took in the last second, oversold and lost updates (the audit, read
from the database), the lock wait p95 over the last second (the instances'
``/metrics``) and Locust's own requests and failures per second. At the end,
the audit's verdict. Finished sales are kept, so two can be shown side by side.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from loadtest.runner import latest_history_row, run_locust
from lockshop.cluster.client import ShopClient, ShopClientError
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.processes import process_state
from lockshop.front_door import Refused
from lockshop.console.runner import Runner
from lockshop.workshop.runs import lock_figures, parse_lock_metrics
from shop.i18n import N_, lazy_gettext

#: What can be sold, and the locustfile that buys it.
PRODUCTS = {
    "item": ("flash_sale", {"sku": "sale-item", "name": "Flash-sale item", "kind": "item",
                            "stock": 100}),
    "seats": ("seat_sale", {"sku": "sale-seats", "name": "Concert, rows A-F", "kind": "ticket",
                            "seats": 60}),
}
LIMITS = {"buyers": (1, 200), "seconds": (1, 120), "business_delay_ms": (0, 2000)}


@dataclass
class SaleRequest:
    strategy: str
    buyers: int = 20
    seconds: int = 10
    business_delay_ms: int = 50
    product: str = "item"

    def __post_init__(self) -> None:
        if self.product not in PRODUCTS:
            raise Refused(422, lazy_gettext("product must be one of %(products)s",
                                       products=", ".join(PRODUCTS)))
        for name, (low, high) in LIMITS.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise Refused(422, lazy_gettext("%(name)s must be a whole number from %(low)s "
                                                "to %(high)s", name=name, low=low, high=high))


@dataclass
class Sale:
    number: int
    request: SaleRequest
    instances: list[str]
    started: float = field(default_factory=time.time)
    samples: list[dict] = field(default_factory=list)
    #: "running", then "done" (with the audit and Locust's totals) or "failed".
    state: str = "running"
    audit: dict | None = None
    locust: dict | None = None
    problem: str = ""

    @property
    def running(self) -> bool:
        return self.state == "running"

    def as_dict(self) -> dict:
        return {"sale": self.number, "request": vars(self.request), "instances": self.instances,
                "started": self.started, "state": self.state, "samples": list(self.samples),
                "audit": self.audit, "locust": self.locust, "problem": self.problem}


class SaleRunner(Runner[Sale]):
    """Runs one sale at a time and keeps the finished ones."""

    kind = N_("sale")

    def __init__(self, cluster: Cluster, admin_token: str | None, runtime: Path) -> None:
        super().__init__()
        self.cluster, self.admin_token, self.runtime = cluster, admin_token, runtime

    def start(self, request: SaleRequest) -> Sale:
        """Sell to ``request.buyers`` on every instance that is up; a 409 while another
        sale runs, or when no instance is up."""
        return self._start(lambda number: Sale(number, request, self._instances_up()))

    def _instances_up(self) -> list[str]:
        # As a load balancer's health check would: a paused or stopped instance gets
        # no buyers, and the others answer its share.
        up = [i.name for i in self.cluster.instances
              if process_state(i.process.pid, i.process.poll()) == "up"]
        if not up:
            raise Refused(409, lazy_gettext("no instance is up"))
        return up

    def _busy(self, running: Sale) -> object:
        return lazy_gettext("sale %(number)s is still running", number=running.number)

    def _work(self, sale: Sale) -> None:
        request = sale.request
        locustfile, product = PRODUCTS[request.product]
        urls = {i.name: i.url for i in self.cluster.instances if i.name in sale.instances}
        admin = ShopClient(next(iter(urls.values())), self.admin_token, timeout=10)
        folder = self.runtime / f"sale-{sale.number}"
        folder.mkdir(parents=True, exist_ok=True)
        done = threading.Event()
        try:
            admin.reset([product])
            admin.set_settings(strategy=request.strategy,
                               business_delay_ms=request.business_delay_ms)
            sampler = threading.Thread(target=self._sample, daemon=True,
                                       args=(sale, admin, urls, folder / "locust", done))
            sampler.start()
            result = run_locust(list(urls.values()), locustfile=locustfile,
                                users=request.buyers, run_time_s=request.seconds,
                                csv_prefix=folder / "locust", admin_token=self.admin_token or "")
            done.set()
            sampler.join()
            sale.audit = admin.audit()
            sale.locust = {"requests": result.requests, "failures": result.failures,
                           "requests_per_second": result.requests_per_second,
                           "p95_ms": result.p95_ms}
            sale.state = "done"
        except Exception as error:  # noqa: BLE001 - the console shows why the sale stopped
            done.set()
            sale.problem = f"{type(error).__name__}: {error}"
            sale.state = "failed"

    def _sample(self, sale: Sale, admin: ShopClient, urls: dict[str, str], csv_prefix: Path,
                done: threading.Event) -> None:
        previous = {name: _scrape(url) for name, url in urls.items()}
        locust_before = {}
        while not done.wait(1.0):
            now = {name: _scrape(url) for name, url in urls.items()}
            locust_now = latest_history_row(csv_prefix)
            sale.samples.append(_sample(sale, admin, previous, now,
                                        locust_rates(locust_before, locust_now)))
            previous, locust_before = now, locust_now or locust_before


def locust_rates(before: dict, now: dict) -> dict[str, float]:
    """Requests and failures per second between two rows of Locust's stats history, from
    its running totals. (Its own "Requests/s" is an average over a window ending seconds
    ago: it read 0 for the first four seconds of a five-second sale.)"""
    if not now:
        return {"requests": 0.0, "failures": 0.0}
    elapsed = float(now["Timestamp"]) - float(before["Timestamp"]) if before else 0.0
    if elapsed <= 0:  # its first row, or no new row since: its own figure for now
        return {"requests": float(now.get("Requests/s") or 0),
                "failures": float(now.get("Failures/s") or 0)}
    return {kind: (float(now[column]) - float(before[column])) / elapsed
            for kind, column in (("requests", "Total Request Count"),
                                 ("failures", "Total Failure Count"))}


def _sample(sale: Sale, admin: ShopClient, previous: dict, now: dict,
            locust: dict[str, float]) -> dict:
    strategy = sale.request.strategy
    try:
        products = admin.audit()["products"]
    except ShopClientError:
        products = []
    answered = [n for n in now if now[n] is not None and previous[n] is not None]
    return {
        "t": round(time.time() - sale.started, 1),
        "stock": sum(p["remaining"] for p in products),
        "sold": sum(p["sold"] for p in products),
        "oversold": sum(p["oversold"] for p in products),
        "lost_updates": sum(p["lost_updates"] for p in products),
        "double_booked_seats": sum(p["double_booked_seats"] for p in products),
        "orders_per_second": {n: (_placed(now[n], strategy) - _placed(previous[n], strategy)
                                  if n in answered else None) for n in now},
        "lock_wait_p95_ms": lock_figures([previous[n] for n in answered],
                                         [now[n] for n in answered], strategy)["wait_p95_ms"]
        if answered else None,
        "locust_requests_per_second": round(locust["requests"], 1),
        "locust_failures_per_second": round(locust["failures"], 1),
    }


def _scrape(url: str) -> dict | None:
    """An instance's /metrics, or None when it does not answer at once (paused, down)."""
    try:
        return parse_lock_metrics(ShopClient(url, timeout=0.5).metrics())
    except ShopClientError:
        return None


def _placed(samples: dict, strategy: str) -> float:
    return samples.get(("lockshop_orders_total", strategy, "placed"), 0.0)
