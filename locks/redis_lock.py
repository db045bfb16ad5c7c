"""The Redis lock that is correct while its lease lasts: ``SET NX PX`` and a Lua release.

The algorithm from the Redis documentation (articles A0, A2 and A4):

acquire
    ``SET lockshop:lock:<name> <token> NX PX <lease>``: set only if absent,
    with an expiry, in ONE command, so that a holder that crashes cannot
    leave a lock that never expires (``SETNX`` then ``EXPIRE`` could: see
    ``redis_broken``). The token is new for every acquisition, so the lock
    knows whose it is.
release
    a Lua script that deletes the key only if it still holds our token:
    checking and deleting in one step, so we can never delete a lock that
    expired and was taken by someone else in between (a plain ``DEL``, or
    ``GET`` then ``DEL``, can: see ``redis_broken``).
fencing
    every acquisition also takes the next number of a counter, in the same
    script: the shop writes only with a fencing token newer than the last one
    it stored for the product.

How it fails: if the holder is paused (GC, SIGSTOP, swapping) longer than
the lease, the key expires and a second holder gets the lock while the first
still thinks it holds it. The fencing token turns that first holder's late
write into a rejected stale write (``shop.orders.order_path.write_stock``).

If Redis cannot be reached, every step raises ``BackendUnavailable``: the
caller must not go on as if it held the lock (the shop answers 503).

Keys, the owners' tokens, the fencing tokens' epoch, scripts and the client
live in ``redis_support``.
"""

from __future__ import annotations

from .errors import LockLost
from .redis_support import (
    FENCE_EPOCH,
    FENCE_PREFIX,
    NEXT_FENCING_TOKEN_FUNCTION,
    RedisFactory,
    RedisLockBase,
)


class RedisLock(RedisLockBase):
    """SET NX PX to acquire, a Lua compare-and-delete to release, a fencing token."""

    fenced = True

    # SET NX PX and, if it worked, the next fencing token: one round trip.
    # Returns the fencing token, or 0 if not acquired.
    ACQUIRE = """
    local lock = KEYS[1]      -- the lock key
    local fence = KEYS[2]     -- its fence counter
    local epoch = KEYS[3]     -- the epoch of every fence counter
    local token = ARGV[1]     -- our token
    local lease_ms = ARGV[2]
    """ + NEXT_FENCING_TOKEN_FUNCTION + """
    if not redis.call("SET", lock, token, "NX", "PX", lease_ms) then
        return 0
    end
    return next_fencing_token(fence, epoch)
    """

    # Deletes only our own lock: 1 if it did, 0 if the key held another token (or none).
    COMPARE_AND_DELETE = """
    local lock = KEYS[1]
    local token = ARGV[1]
    if redis.call("GET", lock) == token then
        return redis.call("DEL", lock)
    end
    return 0
    """

    def _try_acquire(self) -> bool:
        fencing_token = self.run(self.ACQUIRE,
                                 keys=[self.key, FENCE_PREFIX + self.name, FENCE_EPOCH],
                                 args=[self.token, self.lease_ms])
        if not fencing_token:
            return False  # someone else holds it
        self._fencing_token = int(fencing_token)
        return True

    def _release(self) -> None:
        if not self.run(self.COMPARE_AND_DELETE, keys=[self.key], args=[self.token]):
            raise LockLost(self.name, f"the {self.lease_ms} ms lease expired before release")


class RedisLockFactory(RedisFactory):
    lock_class = RedisLock
