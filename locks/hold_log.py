"""What every lock remembers of its own holds: who held which lock, from when to when.

A lock's holder is the only one who knows for sure when it *believed* it held
the lock: a lease can run out, or a session end, while the holder still works.
So each process keeps a short log of its holds, on the machine's real-time
clock (``time.time()``, comparable across processes on one host), and the
console draws them side by side: two holds of one lock that overlap in time
are two holders at once, which is what a lock exists to prevent.

A holder that wrote under its hold says so, and when (``wrote``, ``wrote_at``):
two holders at once that both wrote are the harm a lock exists to prevent; an
overlap where fencing refused the late write is a lock failing safely.

The log is bounded (the last ``capacity`` holds), so a long load run costs a
fixed amount of memory; ``forgotten`` counts the holds pushed out, so that an
audit over a longer run can say it saw only part of it. Holds still open are
kept apart, so they are never pushed out by the finished ones.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass


@dataclass
class HoldRecord:
    id: int
    lock: str  # the lock's name: "product:1"
    strategy: str
    owner: str  # host:pid:thread, as the lock knows it
    fencing_token: int | None
    acquired: float  # time.time() when the acquire returned, seconds
    released: float | None = None  # time.time() when the release began; None while held
    #: How it ended: "released", "lost" (the backend said it was no longer ours), or
    #: "release failed" (the backend could not be reached to say).
    ended: str | None = None
    #: When the holder had read what it decides on (time.time()), if it said so.
    read_at: float | None = None
    #: Whether the holder's write under this hold committed, and when.
    wrote: bool = False
    wrote_at: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


class HoldLog:
    """Thread-safe: the holds of this process, the open ones and the last finished ones."""

    def __init__(self, capacity: int = 20_000) -> None:
        self._lock = threading.Lock()
        self._capacity = capacity
        #: Finished holds pushed out of the log by newer ones, since it began.
        self.forgotten = 0
        self._ids = itertools.count(1)
        self._open: dict[int, HoldRecord] = {}
        self._finished: deque[HoldRecord] = deque(maxlen=capacity)

    def opened(self, lock: str, strategy: str, owner: str, fencing_token: int | None) -> int:
        """A hold began now; its id, for ``closed``."""
        record = HoldRecord(next(self._ids), lock, strategy, owner, fencing_token, time.time())
        with self._lock:
            self._open[record.id] = record
            if len(self._open) > self._capacity:  # a holder that never released: forget it
                self._open.pop(next(iter(self._open)))
                self.forgotten += 1
        return record.id

    def read(self, hold_id: int | None) -> None:
        """The holder's read under this (open) hold is done: it decides on it from now."""
        with self._lock:
            record = self._open.get(hold_id)
            if record is not None:
                record.read_at = time.time()

    def wrote(self, hold_id: int | None) -> None:
        """The holder's write under this (open) hold committed."""
        with self._lock:
            record = self._open.get(hold_id)
            if record is not None:
                record.wrote, record.wrote_at = True, time.time()

    def closed(self, hold_id: int | None, ended: str = "released",
               at: float | None = None) -> None:
        """A hold ended ``at`` (time.time()): when its holder *began* to release, since
        from then on it does nothing under the lock. Stamped after the backend's answer,
        the next holder, granted meanwhile, would seem to overlap it by a round trip."""
        with self._lock:
            record = self._open.pop(hold_id, None)
            if record is None:
                return
            record.released, record.ended = at or time.time(), ended
            self._remember(record)

    def _remember(self, record: HoldRecord) -> None:
        if len(self._finished) == self._capacity:
            self.forgotten += 1
        self._finished.append(record)

    def close_open(self, ended: str) -> int:
        """Close every hold still open, as ``ended``: for a program that drops its locks
        without releasing them (a lab's last holders). How many were open."""
        with self._lock:
            records, self._open = list(self._open.values()), {}
            for record in records:
                record.released, record.ended = time.time(), ended
                self._remember(record)
        return len(records)

    def since(self, since: float = 0.0) -> list[HoldRecord]:
        """Holds open now, and those that ended at or after ``since`` (time.time())."""
        with self._lock:
            finished = [r for r in self._finished if r.released >= since]
            return sorted([*finished, *self._open.values()], key=lambda r: r.acquired)

    def clear(self) -> None:
        with self._lock:
            self._open.clear()
            self._finished.clear()
            self.forgotten = 0


# The process-wide log. A lock records into it unless given another.
hold_log = HoldLog()
