"""The fair ZooKeeper lock: ephemeral sequential nodes, each waiter watching the one ahead.

The recipe of the ZooKeeper documentation, as article A3 writes it down
(its improvement on the simple lock, "避免羊群效应"); A0 tells the same five
steps and A4 shows them in Curator's ``InterProcessMutex``:

    Lock
    1 n = create(l + "/lock-", EPHEMERAL|SEQUENTIAL)
    2 C = getChildren(l, false)
    3 if n is lowest znode in C, exit
    4 p = znode in C ordered just before n
    5 if exists(p, true) wait for watch event
    6 goto 2
    Unlock
    1 delete(n)

Here ``l`` is ``/lockshop/fair/<name>`` and ``n`` is ``lock-<guid>-0000000007``.
SEQUENTIAL: ZooKeeper appends a number that grows with every node created
under ``l``, so the children form a queue. EPHEMERAL: the node goes with the
session that made it, so a holder that dies lets the next one in.

In the code below, ``_try_acquire`` is steps 1 to 4, ``_wait_for_release`` is
step 5, and the loop in ``locks.base`` is step 6: it calls ``_try_acquire``
again, *the second look*, until the lock is ours or the timeout passes.
``_release`` is Unlock.

No herd: a release wakes one waiter, the one just behind (``zk_simple`` wakes
them all). No starvation: the queue is first come, first served. The second
look matters: the node that went may have been a waiter giving up, with the
holder still ahead of it (lesson C38; ``zk_broken`` leaves the look out).

Two shortcuts, each where ZooKeeper's guarantees make a step unnecessary:

* steps 1 and 2 go out together, in one round trip: ZooKeeper applies one
  session's requests in order, so the list already holds our node;
* step 2 is skipped after a wake-up that can only mean "the lock is yours":
  the holder just ahead *handed it over* (an exclusive holder marks its node
  ``released`` in the transaction that deletes it, which a waiter giving up
  or a session ending never does), or the node that went was the only one
  ahead of ours; and only while the session that made our node lives (a
  watch set on the next session speaks of a queue our node has left).

Re-entrant (A0): an owner (``locks.owner.current_owner()``, a thread or an
asyncio task) that holds the lock may acquire it again, with this lock
object or another one of the same factory, without queueing; its node goes
at the release that balances its first acquire (``zk_queue``).

How it fails: a holder whose session ends (a crash, a pause or a partition
longer than the session timeout) loses its node, and the next waiter holds
the lock. ``ensure_held()`` before the commit catches it (``LockLost``), and
the node's creation zxid, the fencing token, refuses a write that comes later
still. A waiter that gives up (a timeout, an error) deletes its node: left
behind, it would block everyone queued after it. A waiter whose connection
drops waits for it to come back; one whose session ends finds its node gone
at its next look and queues again, on the new session (kazoo's recipe does
the same). When ZooKeeper cannot be reached, every step raises
``BackendUnavailable`` (``zk_session``).
"""

from __future__ import annotations

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType

from .errors import LockLost
from .support.zk_client import Wakeup
from .zk_queue import QueueFactory, QueueLockBase, sequence
from .zk_session import OPERATION_TIMEOUT, ROOT

FAIR_ROOT = f"{ROOT}/fair"
#: What a holder writes on its node as it deletes it: "I held the lock, and it is yours".
RELEASED = b"released"


class ZkFairLock(QueueLockBase):
    """The exclusive lock. ``zk_rw``'s locks are this recipe with two kinds of node."""

    root = FAIR_ROOT
    kind = "lock"
    reentrant = True
    #: Our hold excludes everyone: the waiter behind us may take the lock from our
    #: hand-over without looking (a reader, whose hold is shared, must not hand over).
    hands_over = True

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        #: The nodes that must go before the lock is ours, as we last saw them:
        #: [] nothing (it is ours), None we must look again (step 2).
        self.ahead: list[str] | None = None

    def blockers(self, children: list[str], mine: str) -> list[str]:
        """The nodes that must go before we may hold the lock, in queue order.

        ``children`` is every child, in sequence order. Exclusive: every node
        ahead of ours, whatever it is.
        """
        return children[:children.index(mine)]

    def _try_acquire(self) -> bool:
        if self._reenter():
            return True  # this owner holds the lock already: one more acquire to release
        if self.node is None:
            # 1. n = create(l + "/lock-", EPHEMERAL|SEQUENTIAL) and 2. C = getChildren(l),
            # sent together (see the module's docstring); its czxid is our fencing token.
            self.factory.ensure_path(self.parent)
            with self.factory.orphans.delete_if_unanswered(self.parent, self.guid):
                created = self.factory.send(self.client.create_async,
                                            f"{self.parent}/{self.kind}-{self.guid}-",
                                            self.owner.encode(), ephemeral=True,
                                            sequence=True, include_data=True)
                listed = self.factory.send(self.client.get_children_async, self.parent)
                # The list is answered after the create: waiting for it first wakes us once.
                children = listed.get(timeout=OPERATION_TIMEOUT)
                self._created(*created.get(timeout=OPERATION_TIMEOUT))
        elif self.ahead is None:
            # 2. C = getChildren(l) again, the second look: the node we watched went,
            # but it may have been a waiter giving up, with the holder still ahead.
            children = self.factory.read(self.client.get_children_async, self.parent)
        else:
            children = None  # handed over: nothing is ahead of us now, no need to look
        if children is not None:
            mine = self.node.rpartition("/")[2]
            if mine not in children or self.session_id != self.factory.session_id():
                # Our session ended while we waited: queue again, on the new one. Our old
                # node goes with the old session; one the server still shows (it has not
                # seen that session end yet) is deleted first, or it would block us.
                if mine in children:
                    self._leave_queue()
                self.node = self.ahead = None
                return False
            # 3. is n the lowest? 4. if not, p is the last of the nodes ahead of it
            self.ahead = self.blockers(sorted(children, key=sequence), mine)
        if self.ahead:
            return False
        self._start_hold()
        return True

    def _wait_for_release(self, seconds: float) -> None:
        if self.ahead is None:
            return  # our node went with our session: 1. queue again, at once
        # 5. if exists(p, true) wait for watch event
        woken = Wakeup()
        predecessor = f"{self.parent}/{self.ahead[-1]}"
        if self.factory.read(self.client.exists_async, predecessor, watch=woken) is None:
            event = EventType.DELETED  # it went before we could watch it
        else:
            event = woken.wait(min(seconds, self.fallback_poll))
            if event is not None:
                self._metrics.record(self.strategy, "wakeup")
        # 6. goto 2, unless the wake-up can only mean that the lock is ours. Never when our
        # session ended after we looked: our node went with it, and the watch was set on
        # the session after it, about a queue we are no longer in.
        ours = self._lock_is_ours_after(event) and self.session_id == self.factory.session_id()
        self.ahead = [] if ours else None

    def _lock_is_ours_after(self, event: str | None) -> bool:
        """Whether the wake-up ``event`` means "the lock is yours" without a second look:
        the holder just ahead handed it over, or the only node ahead of ours went."""
        return (event == EventType.CHANGED
                or (event == EventType.DELETED and len(self.ahead) == 1))

    def _release(self) -> None:
        hold = self._end_hold()
        if hold is None:
            return  # an inner release of a re-entered lock: we still hold it
        # Unlock: 1. delete(n), handing the lock over when our hold was exclusive.
        try:
            self._delete_own_node(self._hand_over if self.hands_over else None)
        except NoNodeError:
            raise LockLost(self.name, "our node is gone: the ZooKeeper session ended") from None

    def _hand_over(self, node: str):
        """Mark our node ``released`` and delete it, in one transaction (still one write,
        one fsync): the waiter watching it is told ``CHANGED``, which only a holder
        says, where a deletion alone would say ``DELETED``."""
        transaction = self.client.transaction()
        transaction.set_data(node, RELEASED)
        transaction.delete(node)
        return transaction.commit_async()

    def _gave_up(self) -> None:
        self._leave_queue()  # left behind, our node would block everyone queued after it


class ZkFairFactory(QueueFactory):
    lock_class = ZkFairLock
