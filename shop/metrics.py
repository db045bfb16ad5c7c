"""What this instance exposes at ``/metrics``, in Prometheus text format.

Two sources, both per strategy and per process:

* the lock metrics every ``locks`` lock records (acquisitions, timeouts,
  renewals, lost locks, herd wake-ups, wait and hold time histograms);
  the transaction strategies record their row and advisory lock waits there
  too;
* the shop's own counters: orders by outcome, stale writes rejected by
  fencing, optimistic retries.

Counters start at zero when the process starts, as Prometheus expects; to
compare runs, take the difference between two scrapes.
"""

from __future__ import annotations

import threading
from collections import Counter

from locks import MetricsRegistry

#: Lock counters: (snapshot key, metric name, help).
LOCK_COUNTERS = (
    ("acquisitions", "lockshop_lock_acquisitions_total", "Locks acquired."),
    ("timeouts", "lockshop_lock_timeouts_total", "Lock waits that ran out of time."),
    ("releases", "lockshop_lock_releases_total", "Locks released."),
    ("renewals", "lockshop_lock_renewals_total", "Leases renewed while held."),
    ("losses", "lockshop_lock_lost_total", "Locks lost while held."),
    ("wakeups", "lockshop_lock_herd_wakeups_total", "Waiters woken by a release."),
)
LOCK_HISTOGRAMS = (
    ("wait_seconds", "lockshop_lock_wait_seconds", "Time from asking for a lock to getting it."),
    ("hold_seconds", "lockshop_lock_hold_seconds", "Time a lock was held."),
)
SHOP_COUNTERS = {
    "orders": ("lockshop_orders_total", "Order requests by outcome."),
    "stale_writes": ("lockshop_stale_writes_rejected_total",
                     "Stock writes refused by fencing (the lock had moved on)."),
    "retries": ("lockshop_optimistic_retries_total", "Extra attempts of optimistic orders."),
}


class ShopCounters:
    """Thread-safe counters keyed by (name, labels)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter = Counter()

    def add(self, name: str, amount: int = 1, **labels: str) -> None:
        if name not in SHOP_COUNTERS:
            raise ValueError(f"unknown counter {name!r}")
        with self._lock:
            self._counts[(name, tuple(sorted(labels.items())))] += amount

    def items(self) -> list[tuple[str, dict, int]]:
        with self._lock:
            return [(name, dict(labels), n) for (name, labels), n in sorted(self._counts.items())]


counters = ShopCounters()


def render_prometheus(lock_metrics: MetricsRegistry, shop_counters: ShopCounters) -> str:
    lines: list[str] = []
    snapshot = lock_metrics.snapshot()
    for key, metric, help_text in LOCK_COUNTERS:
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} counter"]
        lines += [f'{metric}{{strategy="{_escape(s)}"}} {m[key]}' for s, m in snapshot.items()]
    for key, metric, help_text in LOCK_HISTOGRAMS:
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} histogram"]
        for strategy, m in snapshot.items():
            label = f'strategy="{_escape(strategy)}"'
            for upper, count in m[key]["buckets"]:
                le = "+Inf" if upper == float("inf") else repr(upper)
                lines.append(f'{metric}_bucket{{{label},le="{le}"}} {count}')
            lines.append(f"{metric}_sum{{{label}}} {m[key]['sum']!r}")
            lines.append(f"{metric}_count{{{label}}} {m[key]['count']}")
    for name, (metric, help_text) in SHOP_COUNTERS.items():
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} counter"]
        for counter, labels, value in shop_counters.items():
            if counter == name:
                rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
                lines.append(f"{metric}{{{rendered}}} {value}")
    return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
