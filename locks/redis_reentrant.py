"""A reentrant Redis lock: a hash of owner -> count, changed only by Lua.

The owner is a thread (or an asyncio task), not the process: another
thread of the same instance is a different owner and must wait, as it would
with ``threading.RLock``. Its name comes from ``locks.owner``: never the bare
thread id, which Python hands to the next thread once this one ends.
Key: ``lockshop:lock:<name>`` is a hash here.

acquire
    if the hash does not exist, or already has our owner: ``HINCRBY`` our
    count and renew the lease (``PEXPIRE``); otherwise refuse.
release
    ``HINCRBY -1``; at zero, ``DEL``. If our owner is not in the hash, the
    lease expired: ``LockLost``.

It fails as ``RedisLock`` fails (a holder paused past the lease), and is
fenced the same way.
"""

from __future__ import annotations

from .errors import LockLost
from .owner import current_owner
from .redis_support import RedisFactory, RedisLockBase


class ReentrantRedisLock(RedisLockBase):
    reentrant = True
    fenced = True

    # Returns the new count, or 0 when another owner holds the lock.
    ACQUIRE = """
    local hash = KEYS[1]      -- the lock: owner -> count
    local owner = ARGV[1]
    local lease_ms = ARGV[2]
    if redis.call("EXISTS", hash) == 0 or redis.call("HEXISTS", hash, owner) == 1 then
        local count = redis.call("HINCRBY", hash, owner, 1)
        redis.call("PEXPIRE", hash, lease_ms)
        return count
    end
    return 0
    """

    # Returns the count left, or -1 when the owner is not there (the lease expired).
    RELEASE = """
    local hash = KEYS[1]      -- the lock: owner -> count
    local owner = ARGV[1]
    local lease_ms = ARGV[2]
    if redis.call("HEXISTS", hash, owner) == 0 then
        return -1
    end
    local count = redis.call("HINCRBY", hash, owner, -1)
    if count > 0 then
        redis.call("PEXPIRE", hash, lease_ms)
        return count
    end
    redis.call("DEL", hash)
    return 0
    """

    #: Names the thread (or task) that is asking: see ``locks.owner``.
    asking_owner = staticmethod(current_owner)

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.holder = ""

    def _try_acquire(self) -> bool:
        if not self.held:
            # The owner is the thread (or task) that acquires, not the one that made the object.
            self.holder = self.asking_owner()
        count = self.run(self.ACQUIRE, keys=[self.key], args=[self.holder, self.lease_ms])
        if count == 1:
            self._take_fencing_token()  # a new hold, not a re-entry
        return count > 0

    def _release(self) -> None:
        if self.run(self.RELEASE, keys=[self.key], args=[self.holder, self.lease_ms]) < 0:
            raise LockLost(self.name, f"the {self.lease_ms} ms lease expired before release")

    def _still_held(self) -> bool:
        return bool(self.client.hexists(self.key, self.holder))


class ReentrantRedisFactory(RedisFactory):
    lock_class = ReentrantRedisLock
