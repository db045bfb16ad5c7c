"""Redisson's lock: the reentrant hash, with a watchdog (article A4).

Redisson, the Java client article A4 recommends, locks with the reentrant
hash of ``locks.redis_reentrant`` (owner -> count, changed only by Lua) and
adds a watchdog: while the holder lives, a thread renews the lease every
third of it, so a long section keeps its lock and a dead holder's lock frees
within one lease.

* Renewal is a Lua ``HEXISTS``-then-``PEXPIRE``: only a hash that still has
  our owner is extended.
* The watchdog runs while this lock object holds, and stops at its release
  (an inner release of a re-entered lock stops the inner object's watchdog;
  the outer one's goes on).
* A failed renewal makes the lock *lost*: ``ensure_held()`` raises
  ``LockLost``, and the shop rolls the order back.

What it does not fix: a whole process paused past its lease pauses its
watchdog too. Its fencing token (taken at the first acquisition, as the
reentrant lock does) refuses that holder's late write.
"""

from __future__ import annotations

import redis

from .redis_reentrant import ReentrantRedisLock
from .redis_support import RedisFactory
from .watchdog import LeaseWatchdog


class RedissonLock(ReentrantRedisLock):
    # Extends only a hash that still has our owner: 1 if it did, else 0.
    RENEW_IF_OURS = """
    local hash = KEYS[1]      -- the lock: owner -> count
    local owner = ARGV[1]
    local lease_ms = ARGV[2]
    if redis.call("HEXISTS", hash, owner) == 1 then
        return redis.call("PEXPIRE", hash, lease_ms)
    end
    return 0
    """

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self._watchdog: LeaseWatchdog | None = None

    def _try_acquire(self) -> bool:
        taking = not self.held  # not a re-entry through this same object
        if not super()._try_acquire():
            return False
        if taking:
            self._watchdog = LeaseWatchdog(
                self.name, self._renew, self.lease_ms / 3 / 1000,
                on_renewed=lambda: self._metrics.record(self.strategy, "renewed"),
                renewal_errors=(redis.RedisError,))
        return True

    def _renew(self) -> bool:
        return bool(self.run(self.RENEW_IF_OURS, keys=[self.key],
                             args=[self.holder, self.lease_ms]))

    def _release(self) -> None:
        if not self.held and self._watchdog is not None:  # our last release
            self._watchdog.stop()
            self._watchdog = None
        super()._release()

    def _still_held(self) -> bool:
        lost = self._watchdog is not None and self._watchdog.lost_reason is not None
        return not lost and super()._still_held()


class RedissonFactory(RedisFactory):
    lock_class = RedissonLock
