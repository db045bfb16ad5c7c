"""A Redis lock with a watchdog: the lease is renewed while the holder lives.

A short lease frees the lock soon after a holder crashes; a long critical
section needs a long lease. The watchdog (Redisson's idea) gives both: the
lease stays short, and a background thread renews it every third of the
lease for as long as the holder holds it.

* Renewal is a Lua compare-and-``PEXPIRE``: only our own lock is extended.
* The watchdog stops on release, and on the first failed renewal (the key is
  gone or someone else's, or Redis cannot be reached). The lock is then
  *lost*: ``ensure_held()`` raises ``LockLost``, which the shop calls just
  before it commits, so the order is rolled back rather than written
  without the lock.

What it does not fix: a holder whose whole process is paused pauses its
watchdog too, so the lease can still expire; fencing covers that case.
"""

from __future__ import annotations

import threading

import redis

from .redis_lock import RedisLock
from .redis_support import RedisFactory


class WatchdogRedisLock(RedisLock):
    # Extends only our own lock: 1 if it did, 0 if the key is gone or someone else's.
    RENEW_IF_OURS = """
    local lock = KEYS[1]
    local token = ARGV[1]
    local lease_ms = ARGV[2]
    if redis.call("GET", lock) == token then
        return redis.call("PEXPIRE", lock, lease_ms)
    end
    return 0
    """

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self._stop = threading.Event()
        self._lost_reason: str | None = None
        self._watchdog: threading.Thread | None = None

    def _try_acquire(self) -> bool:
        if not super()._try_acquire():
            return False
        self._stop.clear()
        self._lost_reason = None
        self._watchdog = threading.Thread(target=self._renew_until_stopped, daemon=True,
                                          name=f"watchdog {self.name}")
        self._watchdog.start()
        return True

    def _renew_until_stopped(self) -> None:
        interval = self.lease_ms / 3 / 1000
        while not self._stop.wait(interval):
            try:
                renewed = self.run(self.RENEW_IF_OURS, keys=[self.key],
                                   args=[self.token, self.lease_ms])
            except redis.RedisError as error:
                renewed, reason = 0, f"renewal failed: {error}"
            else:
                reason = "the key expired or was taken before the watchdog renewed it"
            if not renewed:
                self._lost_reason = reason
                self._metrics.record(self.strategy, "lost")
                return
            self._metrics.record(self.strategy, "renewed")

    def _stop_watchdog(self) -> None:
        self._stop.set()
        if self._watchdog is not None and self._watchdog is not threading.current_thread():
            self._watchdog.join()
        self._watchdog = None

    def _release(self) -> None:
        self._stop_watchdog()
        super()._release()

    def _still_held(self) -> bool:
        return self._lost_reason is None and super()._still_held()


class WatchdogRedisFactory(RedisFactory):
    lock_class = WatchdogRedisLock
