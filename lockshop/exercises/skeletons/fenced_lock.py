"""Exercise 6: a fencing token the shop's write checks.

Article A4 and the debate it cites (Kleppmann, "How to do distributed
locking"): a holder whose whole process is paused (a long GC, SIGSTOP,
swapping) past its lease pauses its watchdog too. Its lock expires, another
holder takes it and writes, and then the first one wakes up and writes too,
with no idea that time passed: its write lands on the other holder's, and
that sale is lost (a lost update, lesson C15). No check before the write can
close this, since the pause may come after the check.
The storage must refuse the late write: every acquisition hands out a
number that only grows (a *fencing token*), and the shop writes only with
one newer than the last it saw for that product.

Start from your exercise 5: the checks of exercises 1 to 5 run too. Then
hand out a fencing token on every first acquisition.

Check it:   ./run exercise check 6 fenced_lock.py

What you may use (the base class, RedisLockBase, sets them up):
    self.client, self.key, self.lease_ms, self.owner, self.run(script, keys, args)
    self._fencing_token   set it when you take the lock: the base class hands it on
                          as lock.fencing_token, and the shop writes with it
    a counter key for this lock: "lockshop:fence:" + self.name (INCR it)
"""

from locks import LockLost  # noqa: F401
from locks.redis_support import RedisLockBase
from locks.watchdog import LeaseWatchdog  # noqa: F401


class FencedLock(RedisLockBase):
    reentrant = True

    ACQUIRE = None   # from exercise 5 (TODO 1: extend it, below)
    RELEASE = None   # from exercise 5
    RENEW = None     # from exercise 5

    # TODO 1: when a new hold begins (the count becomes 1), INCR the fencing counter in
    # the same script, and return the count and the fencing token, e.g. {count, token}
    # (a Lua table comes back to Python as a list).

    def _try_acquire(self) -> bool:
        # TODO 2: run ACQUIRE with keys=[self.key, "lockshop:fence:" + self.name]; on a
        # new hold, set self._fencing_token = int(the token); start the watchdog as in
        # exercise 5.
        raise NotImplementedError("TODO 1 and 2: acquire as in exercise 5, and keep the "
                                  "fencing token the script handed out")

    def _release(self) -> None:
        raise NotImplementedError("TODO 3: release as in exercise 5")

    def _still_held(self) -> bool:
        raise NotImplementedError("TODO 4: _still_held as in exercise 5")
