"""Exercise 4 as a student gets the release wrong: it counts down whoever is there.

The acquire is right; the release script never asks whether our owner is in the
hash: HINCRBY on a missing field makes it -1, and "at zero, DEL" then deletes
another owner's lock (lesson C11)."""

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
    local count = redis.call("HINCRBY", key, owner, -1)
    if count > 0 then
        redis.call("PEXPIRE", key, lease_ms)
        return count
    end
    redis.call("DEL", key)
    return 0
    """

    def _try_acquire(self) -> bool:
        if not self.held:
            self.me = self.owner
        return self.run(self.ACQUIRE, keys=[self.key], args=[self.me, self.lease_ms]) > 0

    def _release(self) -> None:
        self.run(self.RELEASE, keys=[self.key], args=[self.me, self.lease_ms])

    def _still_held(self) -> bool:
        return bool(self.client.hexists(self.key, self.me))
