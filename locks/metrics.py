"""What every lock records: waits, holds, timeouts, renewals, losses.

One ``LockMetrics`` per strategy name, shared by all locks of that strategy in
this process. Histograms use fixed buckets (as Prometheus does), so memory
stays constant however long a load run lasts.
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field

# Seconds. Fine at the bottom (an uncontended Redis lock takes ~0.2 ms),
# coarse at the top (a starved waiter can wait for seconds).
DEFAULT_BUCKETS: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)


@dataclass
class Histogram:
    """A cumulative-bucket histogram of durations in seconds."""

    buckets: tuple[float, ...] = DEFAULT_BUCKETS
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0
    maximum: float = 0.0

    def __post_init__(self) -> None:
        # One slot per bucket plus one for "above the last bucket".
        self.counts = [0] * (len(self.buckets) + 1)

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, seconds)] += 1
        self.total += seconds
        self.count += 1
        self.maximum = max(self.maximum, seconds)

    def snapshot(self) -> dict:
        cumulative, running = [], 0
        for upper, n in zip((*self.buckets, float("inf")), self.counts, strict=True):
            running += n
            cumulative.append((upper, running))
        return {"count": self.count, "sum": self.total, "max": self.maximum,
                "buckets": cumulative}


@dataclass
class LockMetrics:
    """Counters and histograms for one strategy in this process."""

    acquisitions: int = 0
    timeouts: int = 0
    releases: int = 0
    renewals: int = 0
    losses: int = 0
    wakeups: int = 0
    wait: Histogram = field(default_factory=Histogram)
    hold: Histogram = field(default_factory=Histogram)

    def snapshot(self) -> dict:
        return {
            "acquisitions": self.acquisitions,
            "timeouts": self.timeouts,
            "releases": self.releases,
            "renewals": self.renewals,
            "losses": self.losses,
            "wakeups": self.wakeups,
            "wait_seconds": self.wait.snapshot(),
            "hold_seconds": self.hold.snapshot(),
        }


class MetricsRegistry:
    """Thread-safe home of the ``LockMetrics`` of every strategy used here."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_strategy: dict[str, LockMetrics] = {}

    def record(self, strategy: str, event: str, seconds: float | None = None) -> None:
        """Count ``event``; for "acquired" and "released", observe ``seconds`` too."""
        with self._lock:
            m = self._by_strategy.get(strategy)
            if m is None:  # not setdefault: that would build a LockMetrics on every call
                m = self._by_strategy[strategy] = LockMetrics()
            if event == "acquired":
                m.acquisitions += 1
                m.wait.observe(seconds or 0.0)
            elif event == "released":
                m.releases += 1
                m.hold.observe(seconds or 0.0)
            elif event == "timeout":
                m.timeouts += 1
                m.wait.observe(seconds or 0.0)
            elif event == "renewed":
                m.renewals += 1
            elif event == "lost":
                m.losses += 1
            elif event == "wakeup":
                m.wakeups += 1
            else:
                raise ValueError(f"unknown lock event {event!r}")

    def snapshot(self) -> dict[str, dict]:
        with self._lock:
            return {name: m.snapshot() for name, m in sorted(self._by_strategy.items())}

    def reset(self) -> None:
        with self._lock:
            self._by_strategy.clear()


# The process-wide registry. A lock records into it unless given another.
metrics = MetricsRegistry()
