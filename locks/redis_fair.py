"""A Redis lock whose waiters queue, sleep until told, and never starve.

Keys, for a lock named ``<name>``:

* ``lockshop:lock:<name>``      the holder's token, with a lease (as ``RedisLock``);
* ``lockshop:queue:<name>``     a list: the waiters' tokens, in arrival order;
* ``lockshop:waiting:<name>``   a hash: waiter token -> "alive until" (ms);
* ``lockshop:since:<name>``     a hash: waiter token -> when it joined the queue (ms);
* ``lockshop:wake:<token>``     one list per waiter, to block on with ``BLPOP``.

Two modes, as Go's ``sync.Mutex`` has them. Normally a free lock goes to
whoever asks first, even past the queue ("barging"): the process that just
released it is often the fastest to ask again, which keeps throughput high.
But once the waiter at the head of the queue has waited longer than
``starving_after_ms``, the lock is *handed* to it on the next release and
nobody may barge past it: no wait grows much longer than that bound.

acquire (one Lua script)
    1. drop waiters at the head of the queue whose "alive until" has passed
       (they gave up or crashed; otherwise they would block everyone);
    2. if the lock is free, take it (with a fencing token) unless a starving
       waiter heads the queue and it is not us;
    3. otherwise join the queue (once) and renew our "alive until".
wait
    ``BLPOP`` on our own wake list, at most ``fallback_poll`` seconds. A
    message there means the lock is already ours: the releaser handed it to
    us. The timeout is the fallback for a signal that never comes (a holder
    that crashed and let its lease expire): we try to acquire again, which
    also tells the queue we are still alive.
release (one Lua script)
    compare-and-check as ``RedisLock``; then, if the waiter heading the queue
    is starving, *hand the lock over*: set the key to its token, take its
    fencing token, and push that to its wake list ("you hold it"). Otherwise
    delete the key and push a plain wake-up to the head ("try now").

Exactly one waiter wakes per release (no herd), and none waits much longer
than ``starving_after_ms`` plus a few critical sections. The scripts build
the wake key from a prefix, so this lock is for a single Redis server, not
Redis Cluster.
"""

from __future__ import annotations

from .errors import LockLost
from .redis_lock import RedisLock
from .redis_support import (
    FENCE_EPOCH,
    FENCE_PREFIX,
    NEXT_FENCING_TOKEN_FUNCTION,
    QUEUE_PREFIX,
    SINCE_PREFIX,
    TRY_NOW,
    WAITING_PREFIX,
    WAKE_PREFIX,
    RedisFactory,
)

# Shared by the scripts, after their names: the clock, the dead-head purge, leaving the
# queue, and the next fencing token.
_PRELUDE = """
local t = redis.call("TIME")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local function purge_dead_heads(queue, waiting, since)
    while true do
        local head = redis.call("LINDEX", queue, 0)
        if not head then return nil end
        if tonumber(redis.call("HGET", waiting, head) or "0") >= now then return head end
        redis.call("LPOP", queue)
        redis.call("HDEL", waiting, head)
        redis.call("HDEL", since, head)
    end
end
local function starving(since, head, starving_after_ms)
    return head and now - tonumber(redis.call("HGET", since, head) or now) > starving_after_ms
end
local function leave(queue, waiting, since, token)
    redis.call("LREM", queue, 0, token)
    redis.call("HDEL", waiting, token)
    redis.call("HDEL", since, token)
end
""" + NEXT_FENCING_TOKEN_FUNCTION


class FairRedisLock(RedisLock):
    #: Longest sleep without a signal; also how often a waiter says it is alive.
    fallback_poll = 0.2

    #: A head waiter that has waited this long is handed the lock (no more barging).
    starving_after_ms = 20

    # Returns our fencing token if we got the lock, else 0 (and we are queued).
    ACQUIRE = """
    local lock = KEYS[1]      -- the holder's token, with a lease
    local queue = KEYS[2]     -- the waiters' tokens, in arrival order
    local waiting = KEYS[3]   -- waiter token -> alive until (ms)
    local since = KEYS[4]     -- waiter token -> when it joined the queue (ms)
    local fence = KEYS[5]     -- the lock's fence counter
    local epoch = KEYS[6]     -- the epoch of every fence counter
    local wake = KEYS[7]      -- our own wake list
    local token = ARGV[1]     -- our token
    local lease_ms = ARGV[2]
    local alive_ms = tonumber(ARGV[3])
    local starving_after_ms = tonumber(ARGV[4])
    """ + _PRELUDE + """
    if redis.call("GET", lock) == token then
        -- Handed to us just as our BLPOP timed out: collect it, do not queue again
        -- (a stale queue entry would later be handed a lock nobody takes).
        local handed = redis.call("LPOP", wake)  -- our fencing token, or 0: "try now"
        leave(queue, waiting, since, token)
        if handed and tonumber(handed) ~= 0 then return tonumber(handed) end
        return next_fencing_token(fence, epoch)
    end
    local head = purge_dead_heads(queue, waiting, since)
    local blocked = head and head ~= token and starving(since, head, starving_after_ms)
    if redis.call("EXISTS", lock) == 0 and not blocked then
        leave(queue, waiting, since, token)
        redis.call("SET", lock, token, "PX", lease_ms)
        return next_fencing_token(fence, epoch)
    end
    if redis.call("HEXISTS", waiting, token) == 0 then
        redis.call("RPUSH", queue, token)
        redis.call("HSET", since, token, now)
    end
    redis.call("HSET", waiting, token, now + alive_ms)
    return 0
    """

    # Returns 1 if released (and maybe handed over), 0 if the lock was not ours.
    RELEASE = """
    local lock = KEYS[1]      -- the holder's token, with a lease
    local queue = KEYS[2]     -- the waiters' tokens, in arrival order
    local waiting = KEYS[3]   -- waiter token -> alive until (ms)
    local since = KEYS[4]     -- waiter token -> when it joined the queue (ms)
    local fence = KEYS[5]     -- the lock's fence counter
    local epoch = KEYS[6]     -- the epoch of every fence counter
    local token = ARGV[1]     -- our token
    local lease_ms = ARGV[2]
    local wake_prefix = ARGV[3]  -- a waiter's wake list is this and its token
    local starving_after_ms = tonumber(ARGV[4])
    """ + _PRELUDE + """
    if redis.call("GET", lock) ~= token then
        return 0
    end
    local head = purge_dead_heads(queue, waiting, since)
    if not head then
        redis.call("DEL", lock)
        return 1
    end
    local wake = wake_prefix .. head
    if starving(since, head, starving_after_ms) then
        leave(queue, waiting, since, head)
        redis.call("SET", lock, head, "PX", lease_ms)
        redis.call("RPUSH", wake, next_fencing_token(fence, epoch))  -- "you hold it"
    else
        redis.call("DEL", lock)
        redis.call("RPUSH", wake, 0)  -- "try now"
    end
    redis.call("PEXPIRE", wake, lease_ms)
    return 1
    """

    # Returns 1 if the lock was handed to us meanwhile (the caller passes it on).
    LEAVE_QUEUE = """
    local lock = KEYS[1]      -- the holder's token, with a lease
    local queue = KEYS[2]     -- the waiters' tokens, in arrival order
    local waiting = KEYS[3]   -- waiter token -> alive until (ms)
    local since = KEYS[4]     -- waiter token -> when it joined the queue (ms)
    local wake = KEYS[5]      -- our own wake list
    local token = ARGV[1]     -- our token
    local wake_prefix = ARGV[2]  -- a waiter's wake list is this and its token
    local lease_ms = ARGV[3]
    redis.call("LREM", queue, 0, token)
    redis.call("HDEL", waiting, token)
    redis.call("HDEL", since, token)
    redis.call("DEL", wake)
    if redis.call("GET", lock) == token then return 1 end
    -- A free lock: the "try now" we were sent, unused, was all that would have taken
    -- it. The new head is told in our stead.
    local head = redis.call("LINDEX", queue, 0)
    if head and redis.call("EXISTS", lock) == 0 then
        redis.call("RPUSH", wake_prefix .. head, 0)  -- "try now"
        redis.call("PEXPIRE", wake_prefix .. head, lease_ms)
    end
    return 0
    """

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.queue = QUEUE_PREFIX + name
        self.waiting = WAITING_PREFIX + name
        self.since = SINCE_PREFIX + name
        self.wake = WAKE_PREFIX + self.token
        self._fair_keys = [self.key, self.queue, self.waiting, self.since,
                           FENCE_PREFIX + name, FENCE_EPOCH]
        self._handed_fencing_token: int | None = None

    def _try_acquire(self) -> bool:
        if self._handed_fencing_token is not None:  # handed over while we waited
            self._fencing_token, self._handed_fencing_token = self._handed_fencing_token, None
            return True
        alive_ms = int(self.fallback_poll * 1000 * 3)
        fencing_token = self.run(self.ACQUIRE, keys=[*self._fair_keys, self.wake], args=[
            self.token, self.lease_ms, alive_ms, self.starving_after_ms])
        if not fencing_token:
            return False
        self._fencing_token = int(fencing_token)
        return True

    def _wait_for_release(self, seconds: float) -> None:
        message = self.client.blpop([self.wake], timeout=min(seconds, self.fallback_poll))
        if message:
            fencing_token = int(message[1])
            if fencing_token != TRY_NOW:  # handed over: we hold it already
                self._handed_fencing_token = fencing_token
            self._metrics.record(self.strategy, "wakeup")

    def _gave_up(self) -> None:
        handed = self.run(self.LEAVE_QUEUE, args=[self.token, WAKE_PREFIX, self.lease_ms],
                          keys=[self.key, self.queue, self.waiting, self.since, self.wake])
        if handed:  # it arrived as we gave up: pass it on rather than sit on it
            self._release()

    def _release(self) -> None:
        if not self.run(self.RELEASE, keys=self._fair_keys, args=[
                self.token, self.lease_ms, WAKE_PREFIX, self.starving_after_ms]):
            raise LockLost(self.name, f"the {self.lease_ms} ms lease expired before release")


class FairRedisFactory(RedisFactory):
    lock_class = FairRedisLock
