"""Exercise 8: the fair lock: ephemeral sequential nodes, each watching the one ahead.

Articles A0 (section 3), A3 ("分布式锁的升级") and A4 (Curator): the simple lock
of exercise 7 wakes every waiter on every release, and they all race to
create the node again: the herd effect (羊群效应, lesson C19). Instead:

    1. create an EPHEMERAL SEQUENTIAL node under the lock's parent: ZooKeeper
       appends a number that grows with every node created there, a queue;
    2. list the children: if yours has the lowest number, the lock is yours;
    3. else watch only the node just before yours, and when it goes, look
       again (2): it may have been a waiter that gave up, not the holder (C38).
    release: delete your node: that wakes exactly one waiter, the next one.

Waiters are served in the order they arrived (C20). A waiter that gives up
(a timeout) must delete its node, or everyone queued behind it waits forever.

Check it:   ./run exercise check 8 queue_lock.py  (exercise 7's checks run too)

What you may use (the base class, ZooKeeperLockBase, sets them up):
    self.client     a kazoo client: .create(path, value, ephemeral=True, sequence=True,
                    makepath=True) returns the path it created; .get_children(path);
                    .exists(path, watch=callback); .delete(path)
    self.parent     this lock's queue: "/lockshop/exercise-queue/<name>" (set below)
    self.node       your node's full path, once created (None before)
    self.owner      who is asking: this thread (or asyncio task), never reused
    _gave_up()      the base class calls it when a wait times out
"""

import threading  # noqa: F401

from kazoo.exceptions import NoNodeError  # noqa: F401

from locks import LockLost  # noqa: F401
from locks.zk_session import ZooKeeperLockBase


def sequence(child: str) -> int:
    """A sequential node's number: ZooKeeper appends it as ten digits."""
    return int(child[-10:])


class QueueLock(ZooKeeperLockBase):

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.parent = f"/lockshop/exercise-queue/{name}"
        self.node = None
        self.ahead = None  # the node just before ours, while we wait

    def _try_acquire(self) -> bool:
        """Join the queue (once), then look at it: True when our node is the lowest."""
        # TODO 1 (A3 step 1): if self.node is None, create self.parent + "/lock-" as an
        # ephemeral sequential node (makepath=True) and keep its path in self.node.
        # TODO 2 (A3 step 2): list the children, sorted by sequence(); if ours is first,
        # return True; else keep the one just before ours in self.ahead and return False.
        raise NotImplementedError("TODO 1 and 2: create your sequential node, then find "
                                  "your place in the queue")

    def _wait_for_release(self, seconds: float) -> None:
        """Wait until the node ahead of ours goes (or ``seconds`` pass)."""
        # TODO 3 (A3 step 3): watch self.parent + "/" + self.ahead with exists(..., watch=);
        # if it is already gone return at once, else wait for the watch. Then the base
        # class calls _try_acquire again: that is the second look (C38).
        raise NotImplementedError("TODO 3: watch only the node just ahead of yours")

    def _release(self) -> None:
        # TODO 4: delete self.node and set it to None (NoNodeError: the session ended:
        # raise LockLost(self.name, "session ended")).
        raise NotImplementedError("TODO 4: delete your node")

    def _gave_up(self) -> None:
        # TODO 5: a wait timed out: delete our node (if any) and forget it, or it blocks
        # everyone queued behind us.
        raise NotImplementedError("TODO 5: on giving up, delete your node")

    def _still_held(self) -> bool:
        """Whether ZooKeeper still says the lock is ours (the shop asks just before it
        writes, through ensure_held())."""
        # TODO 6 (A4, Curator's warning; lesson C22): our node must still exist AND
        # belong to our session: self.client.exists(self.node) gives a stat (None when gone)
        # whose ephemeralOwner must equal self.client.client_id[0]. A session that expired
        # lost its nodes, and a new session holds nothing.
        raise NotImplementedError("TODO 6: _still_held: our node, owned by our session")
