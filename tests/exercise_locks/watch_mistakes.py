"""Exercise 9's mistakes: WATCH/MULTI releases that are right but for one thing, each of
which the grader must name by its lesson."""

from __future__ import annotations

import redis

from locks import LockLost
from locks.redis_watch import WatchReleaseLock


class GivesUpOnRefusal(WatchReleaseLock):
    """WATCH, GET, MULTI/DEL/EXEC, but a refused EXEC ends the release, as if the lock had
    been lost: its own key stays until the lease runs out (C37)."""

    def _release(self) -> None:
        with self.client.pipeline() as pipe:
            try:
                pipe.watch(self.key)
                if pipe.get(self.key) != self.token.encode():
                    raise LockLost(self.name, "the lease expired")
                pipe.multi()
                pipe.delete(self.key)
                pipe.execute()
            except redis.WatchError:
                raise LockLost(self.name, "the key changed") from None


class NoWatch(WatchReleaseLock):
    """GET, then MULTI/DEL/EXEC with nothing WATCHed: the transaction cannot be refused, so
    the gap after the GET is still there (C12)."""

    def _release(self) -> None:
        if self.client.get(self.key) != self.token.encode():
            raise LockLost(self.name, "the lease expired")
        with self.client.pipeline() as pipe:
            pipe.delete(self.key)
            pipe.execute()


class RetriesWithoutReading(WatchReleaseLock):
    """WATCH and GET once; on a refused EXEC it sends MULTI/DEL/EXEC again without a new
    WATCH or GET: the retry deletes whoever holds the key by then (C12)."""

    def _release(self) -> None:
        with self.client.pipeline() as pipe:
            pipe.watch(self.key)
            if pipe.get(self.key) != self.token.encode():
                raise LockLost(self.name, "the lease expired")
            try:
                pipe.multi()
                pipe.delete(self.key)
                pipe.execute()
            except redis.WatchError:
                pipe.multi()
                pipe.delete(self.key)
                pipe.execute()
