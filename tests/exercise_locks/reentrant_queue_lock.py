"""Exercise 12 as a student solves it: exercise 8's queue, and re-entry by the owner
written in the node (A0: compare with the lowest node's data)."""

import threading

from kazoo.exceptions import NoNodeError

from locks import LockLost
from locks.zk_session import ZooKeeperLockBase


def sequence(child: str) -> int:
    return int(child[-10:])


class ReentrantQueueLock(ZooKeeperLockBase):
    reentrant = True
    entries: dict[str, int] = {}

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.parent = f"/lockshop/exercise-reentry/{name}"
        self.node = None
        self.ahead = None

    def _try_acquire(self) -> bool:
        if self.held:
            self.entries[self.node] += 1
            return True
        if self.node is None:
            lowest = self._lowest()
            if lowest is not None and self._owner_of(lowest) == self.owner:
                self.node = lowest
                self.entries[self.node] = self.entries.get(self.node, 0) + 1
                return True
            self.node = self.client.create(self.parent + "/lock-", self.owner.encode(),
                                           ephemeral=True, sequence=True, makepath=True)
        queue = sorted(self.client.get_children(self.parent), key=sequence)
        mine = self.node.rsplit("/", 1)[1]
        if queue[0] == mine:
            self.entries[self.node] = 1
            return True
        self.ahead = queue[queue.index(mine) - 1]
        return False

    def _lowest(self) -> str | None:
        try:
            queue = sorted(self.client.get_children(self.parent), key=sequence)
        except NoNodeError:
            return None
        return f"{self.parent}/{queue[0]}" if queue else None

    def _owner_of(self, path: str) -> str | None:
        try:
            return self.client.get(path)[0].decode()
        except NoNodeError:
            return None

    def _wait_for_release(self, seconds: float) -> None:
        gone = threading.Event()
        if self.client.exists(f"{self.parent}/{self.ahead}", watch=lambda event: gone.set()):
            gone.wait(seconds)

    def _release(self) -> None:
        self.entries[self.node] -= 1
        if self.entries[self.node] > 0:
            return
        del self.entries[self.node]
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
