"""An in-process lock: one ``threading.Lock`` per lock name, per process.

Guarantee: two threads of the *same process* never hold the same name at
once. That is all. A second shop instance is another process with its own
dictionary of locks, so two instances happily run the same critical section
side by side: correct with one instance, overselling with several. This is
the most common "it worked on my laptop" lock.

Waiting needs no polling: a waiter blocks on the ``threading.Lock`` itself
until the holder releases it, then lets go and retries through the base
class's loop (so timeouts and metrics behave as for every other lock).
"""

from __future__ import annotations

import threading

from .base import DistributedLock
from .registry import LockFactory

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()  # guards the dictionary, not the named locks


def _lock_named(name: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(name, threading.Lock())


class LocalLock(DistributedLock):
    """Mutual exclusion between the threads of this process only."""

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self._lock = _lock_named(name)

    def _try_acquire(self) -> bool:
        return self._lock.acquire(blocking=False)

    def _wait_for_release(self, seconds: float) -> None:
        # Block until the holder lets go (or time is up), then hand the lock
        # straight back: the next _try_acquire() competes for it fairly.
        if self._lock.acquire(timeout=seconds):
            self._lock.release()

    def _release(self) -> None:
        self._lock.release()


class LocalLockFactory(LockFactory):
    lock_class = LocalLock
