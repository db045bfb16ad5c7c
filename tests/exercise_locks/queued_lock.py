"""Exercise 10 as a student solves it: the skeleton with its TODOs filled in."""

from locks import LockLost
from locks.redis_support import QUEUE_PREFIX, WAKE_PREFIX, RedisLockBase


class QueuedLock(RedisLockBase):

    fallback_seconds = 0.5

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.queue = QUEUE_PREFIX + name
        self.wake = WAKE_PREFIX + self.token

    ACQUIRE = """
    local key = KEYS[1]
    local queue = KEYS[2]
    local token = ARGV[1]
    local lease_ms = ARGV[2]
    local head = redis.call("LINDEX", queue, 0)
    if redis.call("EXISTS", key) == 0 and (not head or head == token) then
        redis.call("SET", key, token, "PX", lease_ms)
        redis.call("LREM", queue, 0, token)
        return 1
    end
    if not redis.call("LPOS", queue, token) then
        redis.call("RPUSH", queue, token)
    end
    return 0
    """

    RELEASE = """
    local key = KEYS[1]
    local queue = KEYS[2]
    local token = ARGV[1]
    local wake_prefix = ARGV[2]
    if redis.call("GET", key) ~= token then
        return 0
    end
    redis.call("DEL", key)
    local head = redis.call("LINDEX", queue, 0)
    if head then
        redis.call("RPUSH", wake_prefix .. head, 1)
        redis.call("PEXPIRE", wake_prefix .. head, 10000)
    end
    return 1
    """

    def _try_acquire(self) -> bool:
        return bool(self.run(self.ACQUIRE, keys=[self.key, self.queue],
                             args=[self.token, self.lease_ms]))

    def _wait_for_release(self, seconds: float) -> None:
        self.client.blpop([self.wake], timeout=min(seconds, self.fallback_seconds))

    def _gave_up(self) -> None:
        self.client.lrem(self.queue, 0, self.token)
        self.client.delete(self.wake)

    def _release(self) -> None:
        if not self.run(self.RELEASE, keys=[self.key, self.queue],
                        args=[self.token, WAKE_PREFIX]):
            raise LockLost(self.name, "the lease expired")
