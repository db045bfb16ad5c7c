"""Exercise 10's mistakes: queued Redis locks that are right but for one thing."""

from __future__ import annotations

from locks.base import DistributedLock
from locks.redis_fair import FairRedisLock


class LeavesItsQueueEntry(FairRedisLock):
    """The project's queued lock, but a waiter that times out stays in the queue: the next
    release hands the lock to a waiter that is gone, and the one behind it waits for the
    whole lease (C38)."""

    def _gave_up(self) -> None:
        pass


class QueuesButPolls(FairRedisLock):
    """Queued, handed over in order, but a waiter never blocks on its wake list: it asks
    again every 2 ms to 50 ms, as the polling lock does (C34)."""

    _wait_for_release = DistributedLock._wait_for_release  # sleep, with backoff


class ListensOnTheWrongList(FairRedisLock):
    """Queued, handed over in order, but a waiter blocks on a list nobody pushes to (its
    name misspelt): it learns that the lock is its own only when its 0.2 s fallback runs
    out (C34). A grader that timed the wake-up let it through in 2 runs of 6."""

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.wake = "lockshop:wakeup:" + self.token
