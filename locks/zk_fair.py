"""The fair ZooKeeper lock: a queue of sequential nodes, each waiter watching one.

The recipe from the ZooKeeper documentation and Curator's ``InterProcessMutex``
(articles A0, A3 and A4):

acquire
    1. create ``/lockshop/fair/<name>/lock-<guid>-`` as an *ephemeral,
       sequential* node: ZooKeeper appends a number that grows with every
       node created under the parent, so the children form a queue;
    2. list the children: if ours has the lowest number, the lock is ours;
    3. otherwise watch only the node just before ours (our predecessor) and
       sleep until it goes, then go back to 2. If the predecessor vanished
       between 2 and 3 (it gave up, or released), the watch cannot be set:
       go back to 2 at once.
release
    delete our node: that wakes exactly one waiter, the one behind us.

No herd: each release wakes one waiter (the simple lock wakes them all), and
the queue is first come, first served, so no waiter starves.

Two steps are skipped where ZooKeeper's ordering makes them unnecessary:

* steps 1 and 2 go out together: ZooKeeper applies one session's requests
  in order, so the list already holds our node;
* step 2 is skipped after a wake-up that can only mean "the lock is yours":
  our predecessor *handed it over* (a holder marks its node ``released`` as
  it deletes it, see ``zk_support``), or it was the only node ahead of us.
  Any other deletion may be a waiter giving up with others still ahead:
  then we look again.

How it fails: a holder whose session ends (a crash, a pause or a partition
longer than the session timeout) loses its node, and the next waiter holds
the lock. ``ensure_held()`` before the commit catches it (``LockLost``), and
the node's creation zxid, the fencing token, refuses a write that comes later
still. A waiter that gives up (timeout, error) deletes its node: left behind,
it would block everyone queued after it.

Re-entrant: a thread (or asyncio task) that holds the lock may acquire it
again; the node is deleted when every acquire has been released.
"""

from __future__ import annotations

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType

from .errors import LockLost
from .zk_support import ROOT, QueueFactory, QueueLockBase, sequence

FAIR_ROOT = f"{ROOT}/fair"


class ZkQueueLock(QueueLockBase):
    """A lock whose waiters queue as sequential nodes under one parent."""

    root = FAIR_ROOT
    kind = "lock"
    reentrant = True
    #: Our hold excludes everyone: the waiter behind us may take the lock from
    #: our hand-over without looking (a shared read hold must not hand over).
    hands_over = True

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self._predecessor: str | None = None  # the node we wait for
        self._only_one_ahead = False          # ... and it is the only one ahead of us
        self._ours_now = False                # it went in a way that makes the lock ours
        self._waited = False                  # we had to queue for this hold

    def blockers(self, queue: list[str], mine: str) -> list[str]:
        """The nodes that must go before we may hold the lock, in queue order.

        ``queue`` is every child, in sequence order. Exclusive: every node
        ahead of ours, whatever it is.
        """
        return queue[:queue.index(mine)]

    def _try_acquire(self) -> bool:
        if self._reenter():
            return True
        if not self._ours_now:
            # 1. create our node (and list the queue with it), or 2. list it again
            queue = self._join_queue() if self.node is None else self._list_queue()
            mine = self.node.rpartition("/")[2]
            if mine not in queue:  # our session expired while we waited: queue again
                self.node = None
                return False
            ahead = self.blockers(sorted(queue, key=sequence), mine)
            if ahead:  # 3. someone is before us: watch the one just ahead
                self._predecessor, self._only_one_ahead = ahead[-1], len(ahead) == 1
                return False
        self._ours_now = False
        self._start_hold(contended=self._waited)
        return True

    def _wait_for_release(self, seconds: float) -> None:
        """3. Sleep until our predecessor goes (or ``seconds`` pass)."""
        self._waited = True
        event = self._watch(f"{self.parent}/{self._predecessor}", seconds)
        self._ours_now = (event == EventType.CHANGED  # handed over by its holder
                          or (event == EventType.DELETED and self._only_one_ahead))

    def _release(self) -> None:
        hold = self._end_hold()
        if hold is None:
            return  # an inner release of a re-entered lock
        try:
            self._delete_own_node(hand_over=self.hands_over, wait=hold.contended)
        except NoNodeError:
            raise LockLost(self.name, "our node is gone: the ZooKeeper session ended") from None

    def _gave_up(self) -> None:
        self._leave_queue()


class ZkFairLock(ZkQueueLock):
    """The exclusive lock: ``ZkQueueLock`` as it is."""


class ZkFairFactory(QueueFactory):
    lock_class = ZkFairLock
