"""Exercise 9: the token lock released with WATCH, GET, MULTI/DEL/EXEC instead of Lua.

Article A2, "释放锁时验证唯一标识": the release checks the token itself. GET then
DEL is two commands with a gap between them (lesson C12): the lease can run out
in the gap and another client can take the lock, whose key the DEL would then
delete. WATCH closes the gap the optimistic way: once a connection WATCHes a
key, its next EXEC is refused (redis-py raises redis.WatchError) if anything
changed the key after the WATCH. A refusal only says that the key changed, not
whose it is now: read it again and decide again (lesson C37).

Check it:   ./run exercise check 9 watch_lock.py
(it runs exercise 3's token checks too: C11, C12)

What you may use (the base class, RedisLockBase, sets them up):
    self.client     a redis-py client of the grader's Redis
    self.key        this lock's key, "lockshop:lock:<name>"
    self.token      a value no other acquisition uses (new for every lock object)
    self.lease_ms   how long a lease lasts, in milliseconds
redis-py's transaction, on one connection:
    with self.client.pipeline() as pipe:
        pipe.watch(self.key)         # WATCH: runs at once
        value = pipe.get(self.key)   # after WATCH, commands run at once: bytes or None
        pipe.multi()                 # from here on, commands are queued...
        pipe.delete(self.key)
        pipe.execute()               # ...and sent as MULTI, DEL, EXEC; WatchError if refused
LockLost (from locks import LockLost) is how a release says "it was no longer mine".
"""

import redis  # noqa: F401 - redis.WatchError, for the TODO

from locks import LockLost  # noqa: F401 - for the TODO
from locks.redis_support import RedisLockBase


class WatchLock(RedisLockBase):

    def _try_acquire(self) -> bool:
        """One attempt: True if the lock is now ours (as in exercise 2: SET NX PX)."""
        return bool(self.client.set(self.key, self.token, nx=True, px=self.lease_ms))

    def _release(self) -> None:
        """Give the lock back, only if it is still ours; else raise LockLost."""
        # TODO 1 (A2): in a loop, on one pipeline: WATCH self.key; GET it; if it does not
        # hold self.token, raise LockLost(self.name, "the lease expired"); else MULTI, DEL,
        # EXEC and return. When EXEC is refused (redis.WatchError), go round the loop
        # again: WATCH and GET again before you decide.
        raise NotImplementedError("TODO 1: release with WATCH, GET, MULTI/DEL/EXEC, and go "
                                  "round again when EXEC is refused")
