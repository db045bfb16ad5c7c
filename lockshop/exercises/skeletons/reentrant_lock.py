"""Exercise 4: a reentrant lock, a hash of owner -> count, each step one Lua script.

Article A0, section 2.3 ("重入性") and 2.4 ("Lua 脚本"): a holder that calls
code taking the same lock again must not wait for itself (lesson C13). So the
key becomes a hash: field = the owner, value = how many times it entered.

    acquire: if the key does not exist, or its hash already has our owner:
             HINCRBY key owner 1, PEXPIRE key lease; else refuse.
    release: if our owner is not in the hash, the lease ran out (LockLost);
             else HINCRBY key owner -1; at 0 DEL the key, else PEXPIRE again.

An inner release that DELetes the whole key leaves the outer section with no
lock (lesson C27); the acquire written as EXISTS, HSET, EXPIRE in separate
commands lets two owners in (lesson C28): each step must be ONE Lua script.
The owner is self.owner: made for each thread when it first asks and never
given to another. The article's "threadId" is not safe in Python, which hands
a dead thread's id to the next thread (lesson C49).

Check it:   ./run exercise check 4 reentrant_lock.py
(it runs the checks of exercises 1 to 3 too)

What you may use (the base class, RedisLockBase, sets them up):
    self.client, self.key, self.lease_ms, self.owner (see above)
    self.run(script, keys, args)   a Lua script on the server, in one step
    reentrant = True               tells the base class a holder may enter again
    self._still_held()             override it: is our owner still in the hash?
"""

from locks import LockLost  # noqa: F401 - for TODO 3
from locks.redis_support import RedisLockBase


class ReentrantLock(RedisLockBase):
    reentrant = True

    # TODO 1 (A0 2.3 "获取锁的步骤"): the acquire script. At its top:
    #     local key, owner, lease_ms = KEYS[1], ARGV[1], ARGV[2]
    # return the new count, or 0 when another owner holds the lock.
    ACQUIRE = None

    # TODO 2 (A0 2.3 "释放锁的步骤"): the release script: -1 when our owner is not in
    # the hash, else count down; DEL at zero, PEXPIRE otherwise; return what is left.
    RELEASE = None

    def _try_acquire(self) -> bool:
        """One attempt (or a re-entry): True if the lock is ours now."""
        raise NotImplementedError("TODO 1: write ACQUIRE and run it with "
                                  "keys=[self.key], args=[self.owner, self.lease_ms]")

    def _release(self) -> None:
        """One release: count down; the lock goes when the count reaches zero."""
        # TODO 3: run RELEASE; a negative answer means the lease ran out: raise
        # LockLost(self.name, "the lease expired").
        raise NotImplementedError("TODO 2 and 3: write RELEASE and run it; raise LockLost "
                                  "when our owner was not in the hash")

    def _still_held(self) -> bool:
        # TODO 4: is our owner still a field of the hash? (self.client.hexists)
        raise NotImplementedError("TODO 4: _still_held: HEXISTS self.key self.owner")
