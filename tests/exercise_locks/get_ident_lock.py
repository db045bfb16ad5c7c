"""Exercise 4 as a student gets it wrong: the article's "threadId" as the owner.

Right in every step but one: the hash is keyed on ``threading.get_ident()``, which
Python hands to the next thread once this one ends (lesson C49)."""

import threading

from locks import LockLost
from locks.redis_support import RedisLockBase


class ReentrantLock(RedisLockBase):
    reentrant = True

    ACQUIRE = """
    local key, owner, lease_ms = KEYS[1], ARGV[1], ARGV[2]
    if redis.call("EXISTS", key) == 0 or redis.call("HEXISTS", key, owner) == 1 then
        local count = redis.call("HINCRBY", key, owner, 1)
        redis.call("PEXPIRE", key, lease_ms)
        return count
    end
    return 0
    """

    RELEASE = """
    local key, owner, lease_ms = KEYS[1], ARGV[1], ARGV[2]
    if redis.call("HEXISTS", key, owner) == 0 then
        return -1
    end
    local count = redis.call("HINCRBY", key, owner, -1)
    if count > 0 then
        redis.call("PEXPIRE", key, lease_ms)
        return count
    end
    redis.call("DEL", key)
    return 0
    """

    def _try_acquire(self) -> bool:
        self.me = str(threading.get_ident())  # the mistake: an id Python reuses
        return self.run(self.ACQUIRE, keys=[self.key], args=[self.me, self.lease_ms]) > 0

    def _release(self) -> None:
        if self.run(self.RELEASE, keys=[self.key], args=[self.me, self.lease_ms]) < 0:
            raise LockLost(self.name, "the lease expired")

    def _still_held(self) -> bool:
        return bool(self.client.hexists(self.key, self.me))
