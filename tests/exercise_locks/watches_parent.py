"""Exercise 8 as a student gets the wait wrong: every waiter watches the lock's folder.

Each waiter queues with a node of its own, as it should, but waits on a child watch
of the parent: one path watched by every waiter, so every change wakes them all, the
herd effect (lesson C19)."""

import threading

from kazoo.exceptions import NoNodeError

from locks import LockLost
from locks.zk_session import ZooKeeperLockBase


def sequence(child: str) -> int:
    return int(child[-10:])


class QueueLock(ZooKeeperLockBase):

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.parent = f"/lockshop/exercise-queue/{name}"
        self.node = None
        self.ahead = None

    def _try_acquire(self) -> bool:
        if self.node is None:
            self.node = self.client.create(self.parent + "/lock-", self.owner.encode(),
                                           ephemeral=True, sequence=True, makepath=True)
        queue = sorted(self.client.get_children(self.parent), key=sequence)
        mine = self.node.rsplit("/", 1)[1]
        if queue[0] == mine:
            return True
        self.ahead = queue[queue.index(mine) - 1]
        return False

    def _wait_for_release(self, seconds: float) -> None:
        changed = threading.Event()
        # the mistake: one path that every waiter watches (the queue's folder)
        queue = sorted(self.client.get_children(self.parent, watch=lambda e: changed.set()),
                       key=sequence)
        if queue and queue[0] == self.node.rsplit("/", 1)[1]:
            return  # ours is first already: look again at once
        changed.wait(seconds)

    def _release(self) -> None:
        node, self.node = self.node, None
        try:
            self.client.delete(node)
        except NoNodeError:
            raise LockLost(self.name, "session ended") from None

    def _gave_up(self) -> None:
        if self.node is not None:
            node, self.node = self.node, None
            try:
                self.client.delete(node)
            except NoNodeError:
                pass

    def _still_held(self) -> bool:
        stat = self.client.exists(self.node) if self.node else None
        return stat is not None and stat.ephemeralOwner == self.client.client_id[0]


class AlsoWatchesTheNodeAhead(QueueLock):
    """The same herd, and the node ahead watched too, as the right lock does: each node then
    has one watcher, and only the folder's watches say that every waiter wakes. They fire
    at every waiter's arrival and are set again a moment later, so C19 must look for a
    while, not once."""

    def _wait_for_release(self, seconds: float) -> None:
        woken = threading.Event()
        self.client.get_children(self.parent, watch=lambda event: woken.set())
        if self.client.exists(f"{self.parent}/{self.ahead}", watch=lambda event: woken.set()):
            woken.wait(seconds)
