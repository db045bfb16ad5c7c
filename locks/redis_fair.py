"""A fair Redis lock whose waiters sleep until they are told, instead of spinning.

Keys, for a lock named ``<name>``:

* ``lockshop:lock:<name>``      the holder's token, with a lease (as ``RedisLock``);
* ``lockshop:queue:<name>``     a list: the waiters' tokens, in arrival order;
* ``lockshop:waiting:<name>``   a hash: waiter token -> "alive until" (ms);
* ``lockshop:wake:<token>``     one list per waiter, to block on with ``BLPOP``.

acquire (one Lua script)
    1. drop waiters at the head of the queue whose "alive until" has passed
       (they gave up or crashed; otherwise they would block everyone);
    2. if the lock is free and the queue is empty or starts with us: take it;
    3. otherwise join the queue (once) and renew our "alive until".
wait
    ``BLPOP`` on our own wake list, at most ``fallback_poll`` seconds: a
    release pushes to the head waiter's list, so it wakes at once; the
    timeout is the fallback for a signal that never comes (a holder that
    crashed and let its lease expire).
release (one Lua script)
    compare-and-delete as ``RedisLock``, then push a wake-up to the waiter
    at the head of the queue: exactly one waiter wakes per release.

First come, first served: no waiter starves, however busy the lock. The
scripts build the wake key from a prefix, so this lock is for a single
Redis server, not Redis Cluster.
"""

from __future__ import annotations

from .errors import LockLost
from .redis_lock import RedisLock, RedisLockFactory

QUEUE_PREFIX = "lockshop:queue:"
WAITING_PREFIX = "lockshop:waiting:"
WAKE_PREFIX = "lockshop:wake:"


class FairRedisLock(RedisLock):
    #: Longest sleep without a signal; also how often a waiter says it is alive.
    fallback_poll = 0.2

    # KEYS[1]: lock key; KEYS[2]: queue list; KEYS[3]: waiting hash.
    # ARGV[1]: our token; ARGV[2]: lease in ms; ARGV[3]: how long we stay "alive" in ms.
    ACQUIRE = """
    local t = redis.call("TIME")
    local now = t[1] * 1000 + math.floor(t[2] / 1000)
    while true do
        local head = redis.call("LINDEX", KEYS[2], 0)
        if not head then break end
        if tonumber(redis.call("HGET", KEYS[3], head) or "0") >= now then break end
        redis.call("LPOP", KEYS[2])
        redis.call("HDEL", KEYS[3], head)
    end
    local head = redis.call("LINDEX", KEYS[2], 0)
    if redis.call("EXISTS", KEYS[1]) == 0 and (not head or head == ARGV[1]) then
        redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
        if head == ARGV[1] then redis.call("LPOP", KEYS[2]) end
        redis.call("HDEL", KEYS[3], ARGV[1])
        return 1
    end
    if redis.call("HEXISTS", KEYS[3], ARGV[1]) == 0 then
        redis.call("RPUSH", KEYS[2], ARGV[1])
    end
    redis.call("HSET", KEYS[3], ARGV[1], now + tonumber(ARGV[3]))
    return 0
    """

    # KEYS[1]: lock key; KEYS[2]: queue list. ARGV[1]: our token; ARGV[2]: wake prefix.
    RELEASE = """
    if redis.call("GET", KEYS[1]) ~= ARGV[1] then
        return 0
    end
    redis.call("DEL", KEYS[1])
    local head = redis.call("LINDEX", KEYS[2], 0)
    if head then
        redis.call("RPUSH", ARGV[2] .. head, 1)
        redis.call("PEXPIRE", ARGV[2] .. head, 10000)
    end
    return 1
    """

    # KEYS[1]: queue list; KEYS[2]: waiting hash; KEYS[3]: our wake list. ARGV[1]: our token.
    LEAVE_QUEUE = """
    redis.call("LREM", KEYS[1], 0, ARGV[1])
    redis.call("HDEL", KEYS[2], ARGV[1])
    redis.call("DEL", KEYS[3])
    return 1
    """

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.queue = QUEUE_PREFIX + name
        self.waiting = WAITING_PREFIX + name
        self.wake = WAKE_PREFIX + self.token

    def _try_acquire(self) -> bool:
        alive_ms = int(self.fallback_poll * 1000 * 3)
        if not self.client.eval(self.ACQUIRE, 3, self.key, self.queue, self.waiting,
                                self.token, self.lease_ms, alive_ms):
            return False
        self.client.delete(self.wake)  # a signal that came after we had given up
        self._take_fencing_token()
        return True

    def _wait_for_release(self, seconds: float) -> None:
        if self.client.blpop([self.wake], timeout=min(seconds, self.fallback_poll)):
            self._metrics.record(self.strategy, "wakeup")

    def _gave_up(self) -> None:
        self.client.eval(self.LEAVE_QUEUE, 3, self.queue, self.waiting, self.wake, self.token)

    def _release(self) -> None:
        if not self.client.eval(self.RELEASE, 2, self.key, self.queue, self.token, WAKE_PREFIX):
            raise LockLost(self.name, f"the {self.lease_ms} ms lease expired before release")


class FairRedisFactory(RedisLockFactory):
    lock_class = FairRedisLock
