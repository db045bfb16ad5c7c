"""Locks the exercises must catch that the project does not ship as strategies: each is
right but for one thing, and the grader must name that thing's lesson."""

from __future__ import annotations

import threading
import time

from locks.redis_support import RedisLockBase
from locks.redisson import RedissonLock
from locks.zk_fair import ZkFairLock


class InProcessLock(RedisLockBase):
    """A threading.Lock per name, in this process only (Java's synchronized): right
    among threads, useless across the shop's processes (C03)."""

    _locks: dict[str, threading.Lock] = {}
    _guard = threading.Lock()

    def _mine(self) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(self.name, threading.Lock())

    def _try_acquire(self) -> bool:
        return self._mine().acquire(blocking=False)

    def _release(self) -> None:
        self._mine().release()


class InProcessTrustedLock(InProcessLock):
    """The same, and sure it still holds (no look at the server before the write): the
    three instances' buyers then hold at once and all write (C03)."""

    def _still_held(self) -> bool:
        return True


class UnfencedRedisson(RedissonLock):
    """Redisson's lock without its fencing token: a paused holder's late write lands (C15)."""

    fenced = False


class HangingLock(RedisLockBase):
    """An acquire that never returns."""

    def _try_acquire(self) -> bool:
        time.sleep(3600)  # never returns, as far as a grader can wait: time is the point
        return True

    def _release(self) -> None:
        pass


class LeavesItsNode(ZkFairLock):
    """The fair lock, but a waiter that times out keeps its node (C38)."""

    def _gave_up(self) -> None:
        pass


class SecondRoundBreaks(RedisLockBase):
    """SET NX in the first round of ``--repeat``; from the second round (the grader's second
    Redis server this process meets) it lets everyone in: a lock that passes 1 of 2."""

    _servers: set = set()

    def _try_acquire(self) -> bool:
        where = self.client.connection_pool.connection_kwargs.get("port")
        SecondRoundBreaks._servers.add(where)
        if len(SecondRoundBreaks._servers) > 1:
            return True
        return bool(self.client.set(self.key, self.token, nx=True))

    def _release(self) -> None:
        self.client.delete(self.key)


# --- exercise 17: the lock row ------------------------------------------------------------

from locks.table_lock import TableLock, lock_rows  # noqa: E402 - exercise 17's alone
from sqlalchemy import delete  # noqa: E402


class NameOnlyReleaseRow(TableLock):
    """The reference lock row, but its release deletes the row by name alone: a holder
    whose lease ran out deletes the row of the one who took over (C11)."""

    def _release(self) -> None:
        with self._engine.begin() as db:
            db.execute(delete(lock_rows).where(lock_rows.c.name == self.name))


class TakesOverLiveRow(TableLock):
    """The reference lock row, but its acquire deletes the row of its name whatever its
    expiry: every acquire takes the lock from whoever holds it (C01)."""

    def _try_acquire(self) -> bool:
        with self._engine.begin() as db:
            db.execute(delete(lock_rows).where(lock_rows.c.name == self.name))
        return super()._try_acquire()
