"""Exercise 5: a watchdog that renews the lease while the holder lives.

Article A4 (Redisson, "看门狗"): a short lease frees a dead holder's lock
soon; a long section needs a long lease. Redisson's watchdog gives both: the
lease stays short, and a thread of the holder renews it every third of a
lease for as long as the lock is held. When the holder dies, so does its
watchdog, and the lock frees one lease later (lessons C14, C36).

Start from your exercise 4 (copy its scripts and methods here): the
checks of exercises 1 to 4 run too. Then add the watchdog.

Check it:   ./run exercise check 5 watchdog_lock.py

What you may use (the base class, RedisLockBase, sets them up):
    self.client, self.key, self.lease_ms, self.owner, self.run(script, keys, args)
    locks.watchdog.LeaseWatchdog(name, renew, interval): a thread that calls renew()
        every interval seconds until .stop(), or until renew() returns False (then
        .lost_reason says why). You may write your own thread instead.
    self.held       False inside _release when this is the object's last release
"""

from locks import LockLost  # noqa: F401
from locks.redis_support import RedisLockBase
from locks.watchdog import LeaseWatchdog  # noqa: F401 - for TODO 2


class WatchdogLock(RedisLockBase):
    reentrant = True

    ACQUIRE = None   # TODO 1: from exercise 4
    RELEASE = None   # TODO 1: from exercise 4

    # TODO 2 (A4, "每隔 10s 帮你把 Key 的超时时间设为 30s"): a script that renews the
    # lease only while the hash still has our owner:
    #     local key, owner, lease_ms = KEYS[1], ARGV[1], ARGV[2]
    #     if HEXISTS key owner then PEXPIRE key lease_ms and return 1, else return 0
    RENEW = None

    def _try_acquire(self) -> bool:
        # TODO 3: as in exercise 4; then, when this object has just taken the lock
        # (it did not hold it before), start a watchdog renewing every lease_ms / 3.
        raise NotImplementedError("TODO 1 and 3: acquire as in exercise 4, then start the "
                                  "watchdog")

    def _release(self) -> None:
        # TODO 4: on this object's last release (not self.held), stop the watchdog first;
        # then release as in exercise 4.
        raise NotImplementedError("TODO 4: stop the watchdog, then release as in exercise 4")

    def _still_held(self) -> bool:
        # TODO 5: False once a renewal failed; else, as in exercise 4, HEXISTS.
        raise NotImplementedError("TODO 5: _still_held: no failed renewal, and our owner "
                                  "still in the hash")
