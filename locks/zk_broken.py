"""A ZooKeeper queue lock with one step of the recipe left out, on purpose.

Read it next to ``zk_fair``, which keeps the step.
"""

from __future__ import annotations

from kazoo.protocol.states import EventType

from .zk_fair import ZkFairLock
from .zk_queue import QueueFactory


class TrustingQueueLock(ZkFairLock):
    """Takes any deletion of the node it watches to mean "the lock is mine".

    Fails when the node ahead of it belonged to a waiter that gave up (a
    timeout) rather than to the holder: it walks in while the holder still
    holds. The fair lock looks at the queue again after such a wake-up
    (articles A3 and A4: "a woken waiter must check again").
    """

    def _lock_is_ours_after(self, event: str | None) -> bool:
        return event in (EventType.CHANGED, EventType.DELETED)  # no second look


class TrustingQueueFactory(QueueFactory):
    lock_class = TrustingQueueLock
