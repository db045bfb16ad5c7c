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
