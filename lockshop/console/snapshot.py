"""A look that many ask for at once, taken at most once per interval.

Thirty browsers poll the console every second; each used to make the control ask
every instance for its holds and draw up the state again, thirty times a second,
and /control/state took seconds to answer under ten of them. A ``Snapshot`` is
taken again, in a thread of its own, when someone asks for it stale; that asker,
and every other until the new one is there, gets the last one (a second old)
rather than wait. Only the very first look is waited for.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class Snapshot(Generic[T]):
    """``take()``'s value, taken again once it is ``seconds`` old."""

    def __init__(self, take: Callable[[], T], seconds: float) -> None:
        self._take, self.seconds = take, seconds
        self._value: T | None = None
        self._taken_at: float | None = None  # time.monotonic(); None: never taken
        self._taking = False
        self._changed = threading.Condition()

    def get(self) -> T:
        with self._changed:
            while self._taken_at is None and self._taking:
                self._changed.wait()  # the first look of all: wait for it
            if self._taken_at is not None:
                if not self._taking and time.monotonic() - self._taken_at >= self.seconds:
                    self._taking = True
                    threading.Thread(target=self._take_now, name="snapshot",
                                     daemon=True).start()
                return self._value  # fresh, or being taken again: the last one will do
            self._taking = True
        return self._take_now()  # the first look: there is no older one to give

    def renew(self) -> T:
        """Take it now, whatever its age (something changed: a fault): the caller needs
        to see the change, and so do the askers after it."""
        with self._changed:
            while self._taking:
                self._changed.wait()
            self._taking = True
        return self._take_now()

    def _take_now(self) -> T:
        value, taken = None, False
        try:
            value, taken = self._take(), True
        finally:
            with self._changed:
                if taken:
                    self._value, self._taken_at = value, time.monotonic()
                self._taking = False
                self._changed.notify_all()
        return value
