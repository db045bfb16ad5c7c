"""Exercise 2: a lease. SET NX PX: the key and its expiry in one command.

Article A0, section 2.1 ("如果我们的服务器突然宕机..."), A1 and A4: a holder
that crashes never deletes its key, and a key without an expiry blocks every
later buyer forever (lesson C09). SETNX then EXPIRE looks like the answer,
but they are two commands: a crash between them leaves the same key with no
expiry (lesson C10). SET with NX and PX does both at once.

Check it:   ./run exercise check 2 lease_lock.py
(it runs exercise 1's checks too: a lock that passes 2 is right for 1 and 2)

What you may use (the base class, RedisLockBase, sets them up):
    self.client     a redis-py client of the grader's Redis: .set, .get, .delete, ...
    self.key        this lock's key, "lockshop:lock:<name>"
    self.token      a value no other acquisition uses (new for every lock object)
    self.lease_ms   how long a lease lasts, in milliseconds
    self.owner      who is asking: this thread (or asyncio task), never reused
    self.run(script, keys, args)   run a Lua script on the server, in one step
The grader kills your holder inside its section, and once right after its
first write of the key: it needs nothing from your code to find that moment.
"""

from locks.redis_support import RedisLockBase


class LeaseLock(RedisLockBase):

    def _try_acquire(self) -> bool:
        """One attempt: True if the lock is now ours. Never wait or loop here."""
        # TODO 1 (A0 2.1; A1; A4 "SET NX PX"): create the key only if it is absent AND
        # give it an expiry of self.lease_ms, in ONE command. Return whether it worked.
        raise NotImplementedError("TODO 1: SET self.key self.token NX PX self.lease_ms, "
                                  "one command (self.client.set(..., nx=True, px=...))")

    def _release(self) -> None:
        """Give the lock back."""
        # TODO 2: delete the key (exercise 3 will make this safer).
        raise NotImplementedError("TODO 2: give the lock back by deleting self.key")
