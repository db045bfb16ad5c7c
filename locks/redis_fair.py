"""A Redis lock whose waiters queue, sleep until told, and never starve.

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
than ``starving_after_ms`` plus a few critical sections. The queue's keys, the
steps of its upkeep the scripts share with ``redis_two_mode`` (the clock, the
dead-head purge, leaving) and the waiting in Python are in
``support/redis_queue.py``; like its scripts, this lock is for a single Redis
server, not Redis Cluster.
"""

from __future__ import annotations

from .redis_support import RedisFactory
from .support.redis_queue import QUEUE_NAMES, QUEUE_STEPS, QueuedRedisLock


class FairRedisLock(QueuedRedisLock):
    #: A head waiter that has waited this long is handed the lock (no more barging).
    starving_after_ms = 20

    # Returns our fencing token if we got the lock, else 0 (and we are queued).
    ACQUIRE = QUEUE_NAMES + QUEUE_STEPS + """
    local wake = wake_list(token)  -- our own wake list
    if redis.call("GET", lock) == token then
        -- Handed to us just as our BLPOP timed out: collect it, do not queue again
        -- (a stale queue entry would later be handed a lock nobody takes).
        local handed = redis.call("LPOP", wake)  -- our fencing token, or 0: "try now"
        leave(token)
        if handed and tonumber(handed) ~= 0 then return tonumber(handed) end
        return next_fencing_token(fence, epoch)
    end
    local head = purge_dead_heads()
    local blocked = head and head ~= token and waited(head) > starving_after_ms
    if redis.call("EXISTS", lock) == 0 and not blocked then
        leave(token)
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
    RELEASE = QUEUE_NAMES + QUEUE_STEPS + """
    if redis.call("GET", lock) ~= token then
        return 0
    end
    local head = purge_dead_heads()
    if not head then
        redis.call("DEL", lock)
        return 1
    end
    local wake = wake_list(head)
    if waited(head) > starving_after_ms then
        leave(head)
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
    LEAVE_QUEUE = QUEUE_NAMES + QUEUE_STEPS + """
    leave(token)
    redis.call("DEL", wake_list(token))
    if redis.call("GET", lock) == token then return 1 end
    -- A free lock: the "try now" we were sent, unused, was all that would have taken
    -- it. The new head is told in our stead.
    local head = redis.call("LINDEX", queue, 0)
    if head and redis.call("EXISTS", lock) == 0 then
        redis.call("RPUSH", wake_list(head), 0)  -- "try now"
        redis.call("PEXPIRE", wake_list(head), lease_ms)
    end
    return 0
    """

    def _try_acquire(self) -> bool:
        if self._was_handed_over():  # handed over while we waited
            return True
        fencing_token = self.run_script(self.ACQUIRE)
        if not fencing_token:
            return False
        self._fencing_token = fencing_token
        return True

    def _wait_for_release(self, seconds: float) -> None:
        self._sleep_until_told(seconds)


class FairRedisFactory(RedisFactory):
    lock_class = FairRedisLock
