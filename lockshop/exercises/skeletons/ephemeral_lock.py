"""Exercise 7: a ZooKeeper lock on one ephemeral node.

Articles A0 (section 3), A1 and A3 ("简单的分布式锁"): every client tries to
create the same node; ZooKeeper lets exactly one create succeed. The node is
*ephemeral*: it lives only as long as the session of the client that made
it, so a holder that crashes or is cut off loses it, and the lock frees by
itself (lesson C18). A client that finds the node taken watches it and
tries again when ZooKeeper says it was deleted.

Check it:   ./run exercise check 7 ephemeral_lock.py

What you may use (the base class, ZooKeeperLockBase, sets them up):
    self.client     a kazoo client (KazooClient) of the grader's ZooKeeper, connected:
                    .create(path, value, ephemeral=True, makepath=True), .delete(path),
                    .exists(path, watch=callback)  (callback(event) runs once, on change)
    self.path       this lock's node: "/lockshop/exercise/<name>" (set below)
    self.owner      who is asking: this thread (or asyncio task), never reused
    kazoo.exceptions.NodeExistsError, NoNodeError
The base class waits, times out and refuses a release by someone who never
acquired. Between attempts it calls _wait_for_release(seconds): override it
to wait for the node's deletion instead of polling.
"""

import threading  # noqa: F401 - for TODO 2

from kazoo.exceptions import NodeExistsError, NoNodeError  # noqa: F401

from locks.zk_session import ZooKeeperLockBase


class EphemeralLock(ZooKeeperLockBase):

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.path = f"/lockshop/exercise/{name}"

    def _try_acquire(self) -> bool:
        """One attempt: True if the lock is now ours."""
        # TODO 1 (A3, "创建临时节点"): create self.path as an EPHEMERAL node (makepath=True,
        # the owner as its data); True if that worked, False on NodeExistsError.
        raise NotImplementedError("TODO 1: create self.path as an ephemeral node")

    def _wait_for_release(self, seconds: float) -> None:
        """Wait, at most ``seconds``, until the holder's node may be gone."""
        # TODO 2 (A1, A3 "监听"): set a watch on self.path with self.client.exists(...,
        # watch=...): if the node is still there, wait (a threading.Event) until the watch
        # fires or ``seconds`` pass; if it is gone already, return at once.
        raise NotImplementedError("TODO 2: wait for the node's deletion with a watch")

    def _release(self) -> None:
        """Give the lock back."""
        # TODO 3: delete self.path. If it is already gone (NoNodeError), our session ended
        # and someone else may hold the lock: raise LockLost(self.name, "session ended").
        raise NotImplementedError("TODO 3: delete self.path")

    def _still_held(self) -> bool:
        """Whether ZooKeeper still says the lock is ours (the shop asks just before it
        writes, through ensure_held())."""
        # TODO 4 (A4, Curator's warning; lesson C22): our node must still exist AND
        # belong to our session: self.client.exists(self.path) gives a stat (None when gone)
        # whose ephemeralOwner must equal self.client.client_id[0]. A session that expired
        # lost its nodes, and a new session holds nothing.
        raise NotImplementedError("TODO 4: _still_held: our node, owned by our session")
