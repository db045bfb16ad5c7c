"""A ZooKeeper queue lock with one step of the recipe left out, on purpose.

Read it next to ``zk_fair``, which keeps the step.
"""

from __future__ import annotations

from kazoo.protocol.states import EventType

from .zk_fair import ZkFairLock
from .zk_support import QueueFactory


class TrustingQueueLock(ZkFairLock):
    """Takes any deletion of the node it watches to mean "the lock is mine".

    Fails when the node ahead of it belonged to a waiter that gave up (a
    timeout) rather than to the holder: it walks in while the holder still
    holds. The fair lock looks at the queue again after such a wake-up
    (articles A3 and A4: "a woken waiter must check again").
    """

    def _wait_for_release(self, seconds: float) -> None:
        self._waited = True
        event = self._watch(f"{self.parent}/{self._predecessor}", seconds)
        self._ours_now = event in (EventType.CHANGED, EventType.DELETED)


class TrustingQueueFactory(QueueFactory):
    lock_class = TrustingQueueLock
