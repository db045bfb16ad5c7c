"""The queue that waiters for a Redis lock stand in, for a student who may skip it.

``redis_fair`` and ``redis_two_mode`` are one idea: a waiter that does not get the lock
puts its token in a queue and sleeps on a list of its own, and a release wakes the head
of the queue, or hands it the lock. They differ only in who may take a free lock, and
when a release hands it over: that is each one's lesson, and stays in its module as its
scripts. What they share is here:

* the keys, for a lock named ``<name>`` (``redis_support`` names them; the console reads
  them too):

  - ``lockshop:lock:<name>``     the holder's token, with a lease (as ``redis``);
  - ``lockshop:queue:<name>``    the waiters' tokens, in arrival order;
  - ``lockshop:waiting:<name>``  waiter token -> "alive until" (ms);
  - ``lockshop:since:<name>``    waiter token -> when it joined the queue (ms);
  - ``lockshop:wake:<token>``    one list per waiter, to block on with ``BLPOP``;

* the Lua every script of theirs begins with: the keys and arguments by name
  (``QUEUE_NAMES``), then the clock and the queue's upkeep (``QUEUE_STEPS``): how long
  a waiter has waited, dropping the dead waiters at the head, leaving the queue;
* ``QueuedRedisLock``, the Python around the scripts: the wait on the wake list, a lock
  handed over during that wait, leaving the queue on giving up, the release.

Every script is given the lock's key alone (``KEYS[1]``) and builds the others from the
lock's name: names not encoded and sent with every call, which an uncontended acquire
and release feel (a quarter of their client's CPU, measured on ``redis_two_mode``). So
these locks are for a single Redis server, not Redis Cluster.

A waiter says it is alive each time it asks (until three ``fallback_poll`` later); a
waiter that crashed stays at the head until then, and is dropped by the next script that
looks. If Redis cannot be reached, every step raises ``BackendUnavailable``.
"""

from __future__ import annotations

from ..errors import LockLost
from ..redis_support import (
    FENCE_EPOCH,
    FENCE_PREFIX,
    KEY_PREFIX,
    NEXT_FENCING_TOKEN_FUNCTION,
    QUEUE_PREFIX,
    SINCE_PREFIX,
    TRY_NOW,
    WAITING_PREFIX,
    WAKE_PREFIX,
    RedisLockBase,
)

#: The names every queued lock's script starts with: its keys, found from the lock's
#: name, and its arguments, the same four for every script (``QueuedRedisLock.run_script``).
QUEUE_NAMES = f"""
local lock = KEYS[1]  -- the holder's token, with a lease
local name = string.sub(lock, {len(KEY_PREFIX) + 1})
local queue = '{QUEUE_PREFIX}' .. name      -- the waiters' tokens, in arrival order
local waiting = '{WAITING_PREFIX}' .. name  -- waiter token -> alive until (ms)
local since = '{SINCE_PREFIX}' .. name      -- waiter token -> when it joined the queue (ms)
local fence = '{FENCE_PREFIX}' .. name      -- the lock's fence counter
local epoch = '{FENCE_EPOCH}'  -- the epoch of every fence counter
local function wake_list(waiter) return '{WAKE_PREFIX}' .. waiter end
local token = ARGV[1]  -- our token
local lease_ms = ARGV[2]
local alive_ms = tonumber(ARGV[3])  -- how long a waiter is taken for alive after it asks
local starving_after_ms = tonumber(ARGV[4])  -- the lock's threshold
""" + NEXT_FENCING_TOKEN_FUNCTION

#: The queue's upkeep, after the names (and after a script's fast path, which needs no
#: clock): the time, how long a waiter has waited, the dead-head purge, leaving.
QUEUE_STEPS = """
local t = redis.call("TIME")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local function waited(waiter)
    return now - tonumber(redis.call("HGET", since, waiter) or now)
end
-- Drops the waiters at the head whose "alive until" has passed (they gave up or
-- crashed, and would block everyone behind them); returns the head that is left.
local function purge_dead_heads()
    local head = redis.call("LINDEX", queue, 0)
    while head and tonumber(redis.call("HGET", waiting, head) or "0") < now do
        redis.call("LPOP", queue)
        redis.call("HDEL", waiting, head)
        redis.call("HDEL", since, head)
        head = redis.call("LINDEX", queue, 0)
    end
    return head
end
-- Takes a waiter out of the queue; whether it was in it.
local function leave(waiter)
    if redis.call("HDEL", waiting, waiter) == 0 then return false end
    redis.call("LREM", queue, 0, waiter)
    redis.call("HDEL", since, waiter)
    return true
end
"""


class QueuedRedisLock(RedisLockBase):
    """A Redis lock whose waiters queue: its subclass gives the scripts (``ACQUIRE``,
    ``RELEASE``, ``LEAVE_QUEUE``, each beginning with ``QUEUE_NAMES``) and the
    threshold; this gives the waiting on the wake list around them."""

    fenced = True
    #: Longest sleep without a signal; also how often a waiter says it is alive.
    fallback_poll = 0.2
    #: A head of the queue that has waited this long is handed the lock (the subclass's).
    starving_after_ms: int

    ACQUIRE: str  # returns our fencing token if we got the lock, else 0 or less
    RELEASE: str  # returns 1 if released (handed over, or freed), 0 if not ours
    LEAVE_QUEUE: str  # returns 1 if the lock was handed to us meanwhile

    def __init__(self, name: str, *, starving_after_ms: int | None = None,
                 **options) -> None:
        super().__init__(name, **options)
        if starving_after_ms is not None:
            if starving_after_ms < 0:
                raise ValueError(f"starving_after_ms must be >= 0, got {starving_after_ms}")
            self.starving_after_ms = starving_after_ms
        self.wake = WAKE_PREFIX + self.token
        self._alive_ms = int(self.fallback_poll * 1000 * 3)
        self._handed_fencing_token: int | None = None
        #: Whether this hold was handed to us by a release rather than taken: what a
        #: hand-off costs, a sleeper woken, can be counted. (One collected by our next
        #: attempt, as our wait had just timed out, is not told.)
        self.handed_over = False

    def run_script(self, script: str) -> int:
        """``script`` on the lock's key, with the four arguments of ``QUEUE_NAMES``."""
        return int(self.run(script, keys=[self.key], args=[
            self.token, self.lease_ms, self._alive_ms, self.starving_after_ms]))

    def _was_handed_over(self) -> bool:
        """Whether a release handed us the lock while we slept: then it is ours, with the
        fencing token the release took for us."""
        if self._handed_fencing_token is None:
            return False
        self._fencing_token, self._handed_fencing_token = self._handed_fencing_token, None
        self.handed_over = True
        return True

    def _sleep_until_told(self, seconds: float) -> None:
        """Block on our wake list, at most ``fallback_poll``: a fencing token there means
        a release handed us the lock; "try now", that it freed it."""
        # BLPOP's timeout 0 means "forever": never ask for less than a millisecond.
        timeout = max(min(seconds, self.fallback_poll), 0.001)
        message = self.client.blpop([self.wake], timeout=timeout)
        if message:
            fencing_token = int(message[1])
            if fencing_token != TRY_NOW:  # handed over: we hold it already
                self._handed_fencing_token = fencing_token
            self._metrics.record(self.strategy, "wakeup")

    def _gave_up(self) -> None:
        if self.run_script(self.LEAVE_QUEUE):  # handed to us as we gave up: pass it on
            self._release()

    def _release(self) -> None:
        if not self.run_script(self.RELEASE):
            raise LockLost(self.name, f"the {self.lease_ms} ms lease expired before release")
