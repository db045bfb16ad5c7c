"""The ZooKeeper read/write lock: readers share, a writer excludes.

The same queue as the fair lock (``locks.zk_fair``), under
``/lockshop/rw/<name>``, with two kinds of node:

* a **writer** (``write-<guid>-<seq>``) holds the lock when its node is the
  lowest of all; it watches the node just before its own, of either kind;
* a **reader** (``read-<guid>-<seq>``) holds the lock when no *writer* node is
  lower than its own; it watches the last writer before it (when that was
  the only writer ahead, its deletion means the read lock is ours).

So readers that queue together hold the lock together, a writer waits for
every reader before it, and readers that arrive after a waiting writer wait
behind it: a stream of readers cannot starve a writer.

Article A3 gives both: the write lock is ``zk_fair``'s recipe with
``/write-`` nodes, and the read lock changes only steps 3 and 4 (here
``ZkReadLock.blockers``)::

    3 if no write znodes lower than n in C, exit
    4 p = write znode in C ordered just before n

The shop takes the write lock to sell and the read lock for a stocktake
(``GET /api/products/<id>/stocktake``), which must not see half a sale but
need not stop other stocktakes.
"""

from __future__ import annotations

from .zk_fair import ZkFairLock
from .zk_queue import QueueFactory
from .zk_session import ROOT

RW_ROOT = f"{ROOT}/rw"


class ZkReadLock(ZkFairLock):
    root = RW_ROOT
    kind = "read"
    hands_over = False  # other readers may hold the lock with us: just delete

    def blockers(self, children: list[str], mine: str) -> list[str]:
        """The writers ahead of us; readers ahead of us do not block us."""
        return [child for child in children[:children.index(mine)]
                if child.startswith("write-")]


class ZkWriteLock(ZkFairLock):
    root = RW_ROOT
    kind = "write"
    #: Its read half: a factory made from this class alone (a lock plugged in from a
    #: file, ``locks.custom``) gives readers this one.
    read_lock_class = ZkReadLock


class ZkReadWriteFactory(QueueFactory):
    lock_class = ZkWriteLock
    shared_reads = True

    def read_lock(self, name: str, *, timeout: float = 5.0, label: str | None = None) -> ZkReadLock:
        return ZkReadLock(name, strategy=label or self.strategy.name, timeout=timeout,
                          **self.lock_arguments())
