"""The simple ZooKeeper lock: one ephemeral node, and the herd effect.

acquire
    create ``/lockshop/simple/<name>`` as an *ephemeral* node (its data: the
    owner). If that works, the lock is ours; the node's creation zxid is the
    fencing token. If the node exists, someone holds the lock: watch the node
    and sleep until ZooKeeper says it was deleted, then race to create it again.
release
    delete the node. A holder that crashes needs no release: its session
    times out and ZooKeeper deletes the node.

It is correct: nobody gets in while the holder's node exists. Its cost is
the *herd effect*: every waiter watches the same node, so every release
wakes every waiter; all of them race to create the node, one wins, and the
rest go back to watching. With N waiters a release costs N notifications
and N failed creates. The metric ``wakeups`` counts them; the fair lock
(``locks.zk_fair``) wakes exactly one waiter per release.
"""

from __future__ import annotations

from kazoo.exceptions import NodeExistsError, NoNodeError

from .errors import LockLost
from .registry import LockView
from .support.zk_client import Wakeup
from .zk_session import ROOT, ZooKeeperFactory, ZooKeeperLockBase

SIMPLE_ROOT = f"{ROOT}/simple"


class ZkSimpleLock(ZooKeeperLockBase):
    """Create an ephemeral node to lock; watch it, and race again, to wait."""

    def __init__(self, name: str, **options) -> None:
        if "/" in name:
            raise ValueError(f"a ZooKeeper lock name cannot contain '/': {name!r}")
        super().__init__(name, **options)
        self.path = f"{SIMPLE_ROOT}/{name}"

    def _try_acquire(self) -> bool:
        self.factory.ensure_path(SIMPLE_ROOT)
        try:
            # The create may happen without our hearing of it: then the node is deleted later.
            with self.factory.orphans.delete_if_unanswered(SIMPLE_ROOT, self.name):
                path, stat = self.factory.call(self.client.create_async, self.path,
                                               self.owner.encode(), ephemeral=True,
                                               include_data=True)
        except NodeExistsError:
            return False  # held by someone else
        self._created(path, stat)
        return True

    def _wait_for_release(self, seconds: float) -> None:
        # Every waiter watches this one node, so every release wakes them all.
        woken = Wakeup()
        if self.factory.read(self.client.exists_async, self.path, watch=woken) is None:
            return  # it went before we could watch it: race for it now
        if woken.wait(min(seconds, self.fallback_poll)) is not None:
            self._metrics.record(self.strategy, "wakeup")

    def _release(self) -> None:
        try:
            self._delete_own_node()
        except NoNodeError:
            raise LockLost(self.name, "our node is gone: the ZooKeeper session ended") from None


class ZkSimpleFactory(ZooKeeperFactory):
    lock_class = ZkSimpleLock

    def look(self, name: str) -> LockView:
        # Its waiters leave nothing in ZooKeeper: each only watches the one node.
        node = self.describe_node(f"{SIMPLE_ROOT}/{name}")
        return LockView(f"znode {SIMPLE_ROOT}/{name}", [node] if node else [])
