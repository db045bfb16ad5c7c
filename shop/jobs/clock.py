"""The scheduler's clock: the machine's, or one a test moves by hand.

The scheduler asks it two things, what time it is and to sleep until a given
time (a quick job's minimum hold), so that a test can hold a fire time's
steps where it wants them instead of hoping the machine schedules them in
time (``tests/test_jobs.py``: a late instance fires after the first run is
recorded, not whenever a loaded machine gets round to it).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""

    def wait_until(self, moment: float, stop: threading.Event) -> None:
        """Return once ``now()`` has reached ``moment``, or ``stop`` is set."""


class SystemClock:
    """The machine's clock."""

    def now(self) -> float:
        return time.time()

    def wait_until(self, moment: float, stop: threading.Event) -> None:
        stop.wait(max(0.0, moment - self.now()))
