"""A Redis lock with two modes, as Go's ``sync.Mutex``: barging while it is fair
enough, hand-off once a waiter starves.

Fairness has a price. A queue that serves strictly in order (``zk_fair``, or
this lock with a threshold of 0) hands the lock to a sleeping process on every
release: the releaser, still on a CPU, goes to sleep, and the sleeper has to be
woken and scheduled before the next section runs (on a busy machine, tens of
milliseconds). A lock that lets whoever asks first take a free lock (``redis``)
keeps the running process running, and gets more sections done per second, but
a waiter that keeps losing that race waits for a second or more. This lock does
both, and switches between them by itself.

Normal mode
    A free lock goes to whoever asks for it, a newcomer or a waiter: the
    releaser, which often asks again at once, takes it back ("barging").
    Waiters queue in arrival order. Only the head of the queue is awake: it
    asks again every ``head_poll`` seconds, as redis-py's ``Lock`` does, and
    the others sleep. A release wakes nobody while the head is awake: waking
    a process at every release costs the running one a share of the two
    cores and a Redis request per section (the earlier version of this lock
    did, and did half the sections of redis-py's ``Lock``). A release that
    finds a head asleep (it has just come to the head) tells it "try now",
    and from then on it is awake.
Starvation mode
    The lock is in starvation mode while the waiter at the head of the queue
    has waited ``starving_after_ms`` or longer since it queued (0 makes the
    lock a first-come-first-served queue, always in this mode). Then a
    release does not free the lock, it *hands it over*: it writes the head's
    token into the lock's key, takes its fencing token and pushes that onto
    the head's wake list ("you hold it"). A starving head stops asking and
    sleeps on that list. A newcomer finds the lock held, or, if it is free (a
    lease ran out), may not take it ahead of the starving head: it queues at
    the tail.
Back to normal
    As soon as the head of the queue has waited less than the threshold, or
    the queue is empty: the mode is not a flag that could be left behind, it
    is read from the queue by every script, at the moment of deciding.

Under steady demand the two alternate: one process barges while the waiters
sleep, until the waiters queued longest pass the threshold; the lock is then
handed down the queue to each of them, and the holders that went to its tail
start waiting afresh. No waiter waits much longer than the threshold plus one
turn of the queue (a section and a hand-off per waiter ahead of it), against a
second or more on a lock that only barges; in between, the lock runs as an
unfair one does. The switch is decided inside the acquire and release
scripts, each one atomic on the Redis server.

Nobody sleeps on a free lock. A release wakes the head unless it is awake; a
waiter that leaves the queue (it gave up, or its request failed) wakes the
new head if the lock is free, since the wake-up it was sent, or its next poll,
was the only thing that would have taken that lock; the head's poll is a
client-side sleep, not a ``BLPOP`` timeout (Redis checks a blocked client's
timeout on its clock tick, every 100 ms on an idle server at the default
``hz 10``).

Keys: the queue's, as ``redis_fair``'s (``support/redis_queue.py`` lists them, and
the console shows the queue from them), and one of its own,
``lockshop:woken:<name>``, the head that is awake, asking again by itself.

acquire (one Lua script)
    0. nobody queues: take a free lock as ``redis`` does, ``SET NX`` (Go's
       mutex calls it the fast path), and skip the rest;
    1. a lock handed to us as our wait ran out: collect it;
    2. drop waiters at the head whose "alive until" has passed (they gave up
       or crashed, and would block everyone behind them);
    3. take a free lock, with a fencing token, unless a starving waiter heads
       the queue and it is not us;
    4. queue (once), say we are alive until a little later, and keep the
       queue's keys alive as long as we are;
    5. at the head and not starving: we are the awake head, ask again soon;
       otherwise sleep until told.
wait
    the awake head sleeps ``head_poll`` (never past the moment it starves);
    every other waiter blocks on its own wake list with ``BLPOP``: a fencing
    token there means the lock is ours already; "try now" means it was freed.
    Every waiter wakes at least every ``fallback_poll`` to say it is alive.
release (one Lua script)
    compare-and-check as ``redis``; nobody queues: delete it, as ``redis``;
    otherwise hand the lock to a starving head, or free it and wake the head
    if it sleeps.

How it fails: as ``redis``, a holder paused past its lease overlaps the next
holder, and the fencing token refuses the late write. A holder whose lease
runs out while a starving head sleeps makes it wait up to ``fallback_poll``
more. An awake head that crashes still looks awake, so releases wake nobody
until its "alive until" passes (three ``fallback_poll``) and a script drops it;
a free lock then goes at the latest to the next waiter's ``fallback_poll``
wake-up. A waiter
that gives up as the lock is handed to it passes it on (as ``redis_fair``).
If the queue's keys expire (every waiter died, or Redis evicted them), a
waiter still alive queues again at its next attempt. The scripts build every
key but the lock's from its name, so this lock is for a single Redis server,
not Redis Cluster.
"""

from __future__ import annotations

from .redis_support import RedisFactory
from .support.redis_queue import QUEUE_NAMES, QUEUE_STEPS, QueuedRedisLock

WOKEN_PREFIX = "lockshop:woken:"

# The awake head: its key, leaving the queue (it is no longer the awake head), and
# waking a head that sleeps. After the queue's steps.
_AWAKE_HEAD = f"""
local woken = '{WOKEN_PREFIX}' .. name  -- the head that is awake, asking by itself
local function leave_queue(waiter)
    if leave(waiter) and redis.call("GET", woken) == waiter then redis.call("DEL", woken) end
end
local function wake_unless_awake(head)
    if redis.call("GET", woken) ~= head then
        redis.call("SET", woken, head, "PX", alive_ms)
        redis.call("RPUSH", wake_list(head), 0)  -- "try now"
        redis.call("PEXPIRE", wake_list(head), lease_ms)
    end
end
"""


class TwoModeRedisLock(QueuedRedisLock):
    """Barging while no waiter starves; hand-off to the head of the queue once one does."""

    #: A head of the queue that has waited this long switches the lock to starvation
    #: mode. Go's mutex says 1 ms, where waking a sleeper costs microseconds; here it
    #: costs a process's wake-up on a busy machine, and a threshold of tens of sections
    #: keeps hand-offs rare enough to run at a barging lock's speed (docs/results).
    starving_after_ms = 50
    #: How often the awake head of the queue asks again (redis-py's ``Lock``: 0.1 s).
    head_poll = 0.005

    # Returns our fencing token if we got the lock; 0 if we are queued and sleep until
    # told; -n if we are the awake head and starve in n ms (ask again before then).
    ACQUIRE = QUEUE_NAMES + """
    -- 0. Nobody queues: a free lock is ours at once, as in the redis strategy. Every
    -- step below is for waiters; a lock nobody waits for need not pay for them.
    if redis.call("EXISTS", queue) == 0
            and redis.call("SET", lock, token, "NX", "PX", lease_ms) then
        return next_fencing_token(fence, epoch)
    end
    """ + QUEUE_STEPS + _AWAKE_HEAD + """
    -- 1. Handed to us just as our BLPOP timed out: collect it, do not queue again.
    local holder = redis.call("GET", lock)
    if holder == token then
        local handed = redis.call("LPOP", wake_list(token))  -- our fencing token, or 0
        leave_queue(token)
        if handed and tonumber(handed) ~= 0 then return tonumber(handed) end
        return next_fencing_token(fence, epoch)
    end
    -- 2. and 3. Starvation mode: the head has waited too long, and only it may take
    -- a free lock. Normal mode: anyone may.
    local head = purge_dead_heads()
    local starving = head and waited(head) >= starving_after_ms
    if not holder and (not starving or head == token) then
        leave_queue(token)
        redis.call("SET", lock, token, "PX", lease_ms)
        return next_fencing_token(fence, epoch)
    end
    -- 4. Queue once; say we are alive; the queue's keys live as long as a waiter does.
    if redis.call("HEXISTS", waiting, token) == 0 then
        redis.call("RPUSH", queue, token)
        redis.call("HSET", since, token, now)
    end
    redis.call("HSET", waiting, token, now + alive_ms)
    for _, key in ipairs({queue, waiting, since}) do redis.call("PEXPIRE", key, alive_ms) end
    -- 5. The head, not starving yet: awake, it asks again by itself; releases leave it be.
    local starves_in = starving_after_ms - waited(token)
    if (head or token) == token and starves_in > 0 then
        redis.call("SET", woken, token, "PX", alive_ms)
        return -starves_in
    end
    return 0  -- behind the head, or starving: sleep until a release tells us
    """

    # Returns 1 if released (handed over, or freed), 0 if the lock was not ours.
    RELEASE = QUEUE_NAMES + """
    if redis.call("GET", lock) ~= token then
        return 0
    end
    if redis.call("EXISTS", queue) == 0 then  -- nobody queues: as the redis strategy
        redis.call("DEL", lock)
        return 1
    end
    """ + QUEUE_STEPS + _AWAKE_HEAD + """
    local head = purge_dead_heads()
    if head and waited(head) >= starving_after_ms then
        -- Starvation mode: hand the lock over; the head holds it before it wakes.
        leave_queue(head)
        redis.call("SET", lock, head, "PX", lease_ms)
        redis.call("RPUSH", wake_list(head), next_fencing_token(fence, epoch))  -- "you hold it"
        redis.call("PEXPIRE", wake_list(head), lease_ms)
        return 1
    end
    -- Normal mode: free it; an awake head will find it by itself, a sleeping one is told.
    redis.call("DEL", lock)
    if head then wake_unless_awake(head) end
    return 1
    """

    # Returns 1 if the lock was handed to us meanwhile (the caller passes it on).
    LEAVE_QUEUE = QUEUE_NAMES + QUEUE_STEPS + _AWAKE_HEAD + """
    leave_queue(token)
    redis.call("DEL", wake_list(token))
    if redis.call("GET", lock) == token then return 1 end
    -- A free lock: we may have been the one told to try, or the awake head. Nobody
    -- else is coming for it; the new head is told in our stead.
    local head = purge_dead_heads()
    if head and not redis.call("GET", lock) then
        wake_unless_awake(head)
    end
    return 0
    """

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self._awake_for: float | None = None  # seconds until we starve, as the awake head

    def _try_acquire(self) -> bool:
        if self._was_handed_over():  # handed over while we slept
            return True
        answer = self.run_script(self.ACQUIRE)
        if answer > 0:
            self._fencing_token = answer
            return True
        self._awake_for = -answer / 1000 if answer < 0 else None
        return False

    def _wait_for_release(self, seconds: float) -> None:
        if self._awake_for is not None:  # the awake head: a short nap, then ask again
            self._sleep(min(seconds, self.head_poll, self._awake_for))
            return
        self._sleep_until_told(seconds)


class TwoModeRedisFactory(RedisFactory):
    lock_class = TwoModeRedisLock
