"""Exercise 3: a token per holder, and a release that deletes only its own lock.

Article A0, section 2.2 ("互斥性"), and A2 (a unique token, 唯一标识, so that a
client never releases another's lock, 误删): A's lease runs out while it still
works, B takes the lock, then A finishes and DELetes... B's lock. C walks in,
and B and C hold at once (lesson C11). Checking the token with GET before the
DEL is two commands with a gap between them: the lease can run out in that gap
(lesson C12). A Lua script runs on the server in one step: compare and delete
there.

Check it:   ./run exercise check 3 token_lock.py
(it runs the checks of exercises 1 and 2 too)

What you may use (the base class, RedisLockBase, sets them up):
    self.client     a redis-py client of the grader's Redis
    self.key        this lock's key, "lockshop:lock:<name>"
    self.token      a value no other acquisition uses (new for every lock object)
    self.lease_ms   how long a lease lasts, in milliseconds
    self.owner      who is asking: this thread (or asyncio task), never reused
    self.run(script, keys, args)   run a Lua script on the server, in one step:
                    inside it, KEYS[1] is keys[0], ARGV[1] is args[0], ...
LockLost (from locks import LockLost) is how a release says "it was no longer mine".
"""

from locks import LockLost  # noqa: F401 - for TODO 2
from locks.redis_support import RedisLockBase


class TokenLock(RedisLockBase):

    # TODO 2 (A2; A4 "释放锁"): a Lua script that deletes the key only if it still
    # holds our token. Name its keys and arguments at its top:
    #     local key = KEYS[1]
    #     local token = ARGV[1]
    # then compare redis.call("GET", key) with token; DEL and return 1 if they match,
    # else return 0.
    RELEASE = None

    def _try_acquire(self) -> bool:
        """One attempt: True if the lock is now ours. Never wait or loop here."""
        # TODO 1: as in exercise 2: SET self.key self.token NX PX self.lease_ms.
        raise NotImplementedError("TODO 1: SET self.key self.token NX PX self.lease_ms")

    def _release(self) -> None:
        """Give the lock back, only if it is still ours; else raise LockLost."""
        # TODO 3: run RELEASE with keys=[self.key], args=[self.token]; when it deleted
        # nothing, the lease had run out: raise LockLost(self.name, "the lease expired").
        raise NotImplementedError("TODO 2 and 3: write RELEASE (compare and delete in Lua) "
                                  "and run it with self.run")
