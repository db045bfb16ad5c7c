"""Exercise 12: ZooKeeper re-entry: the owner's identity in its node.

Article A0 (section 3, "可重入"): "when a client creates its node, it writes its
host and thread into it; the next time it wants the lock, it compares them with
the data of the lowest node. If they are its own, it has the lock already;
if not, it creates an ephemeral sequential node and queues." A4 shows the same
in Curator's InterProcessMutex (lesson C29).

Start from your exercise 8 (the fair lock): its queue, its watch on the node
just ahead, its second look, its clean-up on giving up (TODOs 1 to 5 below are
the same). Then add re-entry:

    acquire: before you queue, read the lowest node's data: if it is self.owner,
             the lock is yours already: count one more entry, return True, and
             make no node (your own node would queue behind yourself forever);
    release: count one entry down; delete the node only at zero (C27).

The owner is self.owner: one per thread (or asyncio task), never given to
another (C49). Not your session: every thread of a process shares one, so
"my session's node" lets every thread of the process in. And not your memory
alone: after your session expired your node is gone, another owner may hold
the lock, and re-entering would put you in beside it.

Check it:   ./run exercise check 12 reentrant_queue_lock.py
(it runs exercises 7 and 8's checks too)

What you may use (the base class, ZooKeeperLockBase, sets them up):
    self.client     a kazoo client: .create(path, value, ephemeral=True, sequence=True,
                    makepath=True) returns the path it created; .get_children(path);
                    .get(path) returns (data, stat); .exists(path, watch=callback);
                    .delete(path)
    self.parent     this lock's queue: "/lockshop/exercise-reentry/<name>" (set below)
    self.node       your node's full path, once created or re-entered (None before)
    self.owner      who is asking: this thread (or asyncio task), never reused
    entries         node path -> how many acquires its owner has not released: one dict
                    for every lock object of this process (an inner call makes a new one)
"""

import threading  # noqa: F401

from kazoo.exceptions import NoNodeError  # noqa: F401

from locks import LockLost  # noqa: F401
from locks.zk_session import ZooKeeperLockBase


def sequence(child: str) -> int:
    """A sequential node's number: ZooKeeper appends it as ten digits."""
    return int(child[-10:])


class ReentrantQueueLock(ZooKeeperLockBase):
    reentrant = True
    entries: dict[str, int] = {}

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.parent = f"/lockshop/exercise-reentry/{name}"
        self.node = None
        self.ahead = None  # the node just before ours, while we wait

    def _try_acquire(self) -> bool:
        """Enter again if the lowest node is our owner's; else queue (once) and look."""
        # TODO 7 (A0 "可重入"; C29): if self.held (this lock object holds already: an inner
        # acquire on it), count one more entry in self.entries[self.node] and return True.
        # If self.node is None and the queue's lowest node holds self.owner (its data), take
        # that node as self.node, count one more entry, and return True.
        # TODO 1 (as in exercise 8): if self.node is None, create self.parent + "/lock-" as
        # an ephemeral sequential node whose data is self.owner.encode(), keep its path.
        # TODO 2: list the children, sorted by sequence(); if ours is first, count its first
        # entry (self.entries[self.node] = 1) and return True; else keep the one just
        # before ours in self.ahead and return False.
        raise NotImplementedError("TODO 7, 1 and 2: enter again when the lowest node is your "
                                  "owner's; else queue and find your place")

    def _wait_for_release(self, seconds: float) -> None:
        """Wait until the node ahead of ours goes (or ``seconds`` pass)."""
        # TODO 3 (as in exercise 8): watch only the node just ahead of yours.
        raise NotImplementedError("TODO 3: watch only the node just ahead of yours")

    def _release(self) -> None:
        # TODO 8 (C27): count one entry of self.node down; while some are left, keep the
        # node and return.
        # TODO 4: at zero, delete the node and forget its count (NoNodeError: the session
        # ended: raise LockLost(self.name, "session ended")).
        raise NotImplementedError("TODO 8 and 4: count down; delete your node at zero")

    def _gave_up(self) -> None:
        # TODO 5 (as in exercise 8): a wait timed out: delete our node, if any, and forget it.
        raise NotImplementedError("TODO 5: on giving up, delete your node")

    def _still_held(self) -> bool:
        """Whether ZooKeeper still says the lock is ours."""
        # TODO 6 (as in exercise 8): our node exists and belongs to our session.
        raise NotImplementedError("TODO 6: _still_held: our node, owned by our session")
