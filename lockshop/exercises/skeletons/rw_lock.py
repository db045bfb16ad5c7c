"""Exercise 13: a ZooKeeper read/write lock.

Article A3 ("共享锁", the shared lock): readers and writers queue in ONE line of
ephemeral sequential nodes under the lock's parent, "read-…" and "write-…".
The write lock is the fair lock of exercise 8; the read lock changes only two
steps of its recipe:

    3 if no write znodes lower than n in C, exit
    4 p = write znode in C ordered just before n

So readers queued together hold the lock together (lesson C21), a writer
waits for every node ahead of it, readers too, and a reader that arrives
after a waiting writer waits behind it: a stream of readers cannot starve a
writer (lesson C39). Which nodes stand between a node and the lock is all
you write: the queue, the watch, the second look, the hand-over and the
clean-up are the project's fair lock's (locks/zk_fair.py, ZkFairLock), which
these classes extend.

The shop takes the write lock to sell, and the read lock for a stocktake
(GET /api/products/<id>/stocktake), which must not see half a sale but need
not stop other stocktakes.

Check it:   ./run exercise check 13 rw_lock.py

What you may use (ZkFairLock, locks/zk_fair.py, does the rest):
    blockers(children, mine)   the nodes that must go before ``mine`` holds the lock:
                               ``children`` is every child's name, in queue order;
                               ``mine`` is ours ("read-<guid>-0000000007"). The lock
                               is ours when it returns []; else we watch its last one.
    hands_over                 True: on release, the holder tells the node just behind
                               it "the lock is yours", and that waiter walks in without
                               looking at the queue again.
    _still_held()              ZkFairLock's: asks ZooKeeper whether your node is still
                               there, owned by your session (the shop asks before it writes).
"""

from locks.zk_fair import ZkFairLock

ROOT = "/lockshop/exercise-rw"


class ReadLock(ZkFairLock):
    root = ROOT
    kind = "read"
    # TODO 3 (C21): may a reader hand the lock over to the waiter behind it? Other readers
    # may still hold it with you: a writer told "it is yours" would walk in beside them.
    # Set hands_over here.

    def blockers(self, children: list[str], mine: str) -> list[str]:
        """The nodes a reader waits for: the writers ahead of it, holding or waiting."""
        # TODO 2 (A3 steps 3 and 4; C21, C39): the nodes ahead of ``mine`` whose names
        # start with "write-". Not only a writer that holds: one that waits counts too.
        raise NotImplementedError("TODO 2: a reader's blockers: every writer ahead of it")


class WriteLock(ZkFairLock):
    root = ROOT
    kind = "write"
    read_lock_class = ReadLock  # the shop's readers take this one

    def blockers(self, children: list[str], mine: str) -> list[str]:
        """The nodes a writer waits for."""
        # TODO 1 (A3, the exclusive lock): every node ahead of ``mine``, readers and
        # writers alike.
        raise NotImplementedError("TODO 1: a writer's blockers: every node ahead of it")
