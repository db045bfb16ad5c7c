"""What this instance exposes at ``/metrics``, rendered by ``prometheus-client``.

Two sources, both per strategy and per process:

* the lock metrics every ``locks`` lock records (acquisitions, timeouts,
  renewals, lost locks, herd wake-ups, wait and hold time histograms); the
  transaction strategies record their row and advisory lock waits there too.
  ``locks`` knows nothing of Prometheus (it is meant to be lifted on its
  own), so a collector reads its figures at each scrape;
* the shop's own counters: orders by outcome, stale writes rejected by
  fencing, optimistic retries.

Counters start at zero when the process starts, as Prometheus expects; to
compare runs, take the difference between two scrapes.
"""

from __future__ import annotations

from collections.abc import Iterator

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.utils import floatToGoString

import locks
from locks import MetricsRegistry

#: The text format every Prometheus server reads.
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4

#: Lock counters: (key in the locks' snapshot, metric name, help).
LOCK_COUNTERS = (
    ("acquisitions", "lockshop_lock_acquisitions", "Locks acquired."),
    ("timeouts", "lockshop_lock_timeouts", "Lock waits that ran out of time."),
    ("releases", "lockshop_lock_releases", "Locks released."),
    ("renewals", "lockshop_lock_renewals", "Leases renewed while held."),
    ("losses", "lockshop_lock_lost", "Locks lost while held."),
    ("wakeups", "lockshop_lock_herd_wakeups", "Waiters woken by a release."),
)
LOCK_HISTOGRAMS = (
    ("wait_seconds", "lockshop_lock_wait_seconds", "Time from asking for a lock to getting it."),
    ("hold_seconds", "lockshop_lock_hold_seconds", "Time a lock was held."),
)

# Counters here are plain running totals: no "_created" series beside each one.
prometheus_client.disable_created_metrics()


class LockCollector:
    """The figures of ``locks``' own registry, read at each scrape."""

    def __init__(self, lock_metrics: MetricsRegistry) -> None:
        self.lock_metrics = lock_metrics

    def collect(self) -> Iterator[Metric]:
        snapshot = self.lock_metrics.snapshot()
        for key, name, help_text in LOCK_COUNTERS:
            family = CounterMetricFamily(name, help_text, labels=["strategy"])
            for strategy, figures in snapshot.items():
                family.add_metric([strategy], figures[key])
            yield family
        for key, name, help_text in LOCK_HISTOGRAMS:
            family = HistogramMetricFamily(name, help_text, labels=["strategy"])
            for strategy, figures in snapshot.items():
                histogram = figures[key]
                family.add_metric([strategy], sum_value=histogram["sum"], buckets=[
                    (floatToGoString(upper), count) for upper, count in histogram["buckets"]])
            yield family


class ShopCounters:
    """The shop's own counters, each with the labels it is counted by."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._counters = {
            "orders": Counter("lockshop_orders", "Order requests by outcome.",
                              ["strategy", "outcome"], registry=registry),
            "stale_writes": Counter("lockshop_stale_writes_rejected",
                                    "Stock writes refused by fencing (the lock had moved on).",
                                    ["strategy"], registry=registry),
            "retries": Counter("lockshop_optimistic_retries",
                               "Extra attempts of optimistic orders.", ["strategy"],
                               registry=registry),
        }

    def add(self, name: str, amount: int = 1, **labels: str) -> None:
        try:
            counter = self._counters[name]
        except KeyError:
            raise ValueError(f"unknown counter {name!r}") from None
        counter.labels(**labels).inc(amount)


#: This process's registry: the locks' figures and the shop's counters, nothing else
#: (prometheus-client's default registry would add the process's own metrics).
registry = CollectorRegistry()
registry.register(LockCollector(locks.metrics))
counters = ShopCounters(registry)


def render_prometheus() -> bytes:
    """Everything above, in Prometheus's text format."""
    return generate_latest(registry)
