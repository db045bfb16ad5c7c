"""Exercise 1: a Redis lock with SETNX, released with DEL.

Article A0, section 2.1 ("基本实现"): a lock must be seen by every process,
and only one may hold it. Redis is outside every process; SETNX (set if not
exists) succeeds for the first caller only and answers 0 to the rest.

Check it:   ./run exercise check 1 setnx_lock.py

What you may use (the base class, RedisLockBase, sets them up):
    self.client     a redis-py client of the grader's Redis: .set, .get, .delete, ...
    self.key        this lock's key, "lockshop:lock:<name>"
    self.token      a value no other acquisition uses (new for every lock object)
    self.lease_ms   how long a lease lasts, in milliseconds (exercise 2 on)
    self.owner      who is asking: this thread (or asyncio task), never reused
    self.run(script, keys, args)   run a Lua script on the server, in one step
The base class waits, times out, refuses a release by someone who never
acquired, and gives you `with`: you write one attempt and the release.
"""

from locks.redis_support import RedisLockBase


class SetnxLock(RedisLockBase):

    def _try_acquire(self) -> bool:
        """One attempt: True if the lock is now ours. Never wait or loop here."""
        # TODO 1 (A0 2.1, "互斥"): SETNX the lock's key with your token; it answers
        # true for the first caller only. Return whether it did.
        raise NotImplementedError("TODO 1: take the lock with SETNX of self.key "
                                  "(self.client.setnx)")

    def _release(self) -> None:
        """Give the lock back."""
        # TODO 2 (A0 2.1, "释放锁"): delete the key, so the next caller's SETNX succeeds.
        raise NotImplementedError("TODO 2: give the lock back by deleting self.key "
                                  "(self.client.delete)")
