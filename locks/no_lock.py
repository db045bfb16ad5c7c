"""No lock at all: every caller "acquires" at once.

This is the control group. The order path's read-check-write runs unguarded,
so two buyers who read the same stock both write ``stock - 1``: one sale's
decrement is lost, and with enough buyers more is sold than there was.
"""

from __future__ import annotations

from .base import DistributedLock
from .registry import LockFactory


class NoLock(DistributedLock):
    """A lock that never excludes anyone."""

    def _try_acquire(self) -> bool:
        return True

    def _release(self) -> None:
        pass


class NoLockFactory(LockFactory):
    lock_class = NoLock
    excludes = False
