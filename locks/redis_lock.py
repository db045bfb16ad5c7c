"""Redis locks: the shared plumbing, and the lock that is correct while its lease lasts.

Keys, readable in ``redis-cli``:

* ``lockshop:lock:<name>``   holds the owner's token while the lock is held;
* ``lockshop:fence:<name>``  a counter, ``INCR``-ed on every acquisition;
* ``lockshop:fence-epoch``   the epoch of the counters (see below).

A fencing token must never go backwards, and a Redis that restarts without
persistence forgets its counters: the next token would be 1, older than the
last one the shop stored, and every write would be refused as stale forever.
So the token is ``epoch * 1,000,000 + counter``, where the epoch is the Redis
server's clock (in seconds) the first time a token was asked for since the
server started: a restarted server starts a larger epoch (unless the old one
lived less than a second, or handed out a million tokens for one name).

``RedisLock`` is the algorithm from the Redis documentation:

acquire
    ``SET lockshop:lock:<name> <token> NX PX <lease>``: set only if absent,
    with an expiry, in ONE command, so that a holder that crashes cannot
    leave a lock that never expires. The token is new for every acquisition.
release
    a Lua script that deletes the key only if it still holds our token:
    checking and deleting in one step, so we can never delete a lock that
    expired and was taken by someone else in between.

How it fails: if the holder is paused (GC, SIGSTOP, swapping) longer than
the lease, the key expires and a second holder gets the lock while the first
still thinks it holds it. Fencing tokens turn that first holder's late write
into a rejected stale write (``shop.orders.write_stock``).

If Redis cannot be reached, every step raises ``BackendUnavailable``: the
caller must not go on as if it held the lock (the shop answers 503).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import secrets

import redis

from .base import DistributedLock
from .errors import BackendUnavailable, LockLost
from .registry import Backends, LockFactory, Strategy

KEY_PREFIX = "lockshop:lock:"
FENCE_PREFIX = "lockshop:fence:"
FENCE_EPOCH = "lockshop:fence-epoch"

# A Lua function every script that hands out fencing tokens starts with.
NEXT_TOKEN_FUNCTION = """
local function next_token(fence, epoch_key)
    local epoch = redis.call("GET", epoch_key)
    if not epoch then
        redis.call("SET", epoch_key, redis.call("TIME")[1], "NX")
        epoch = redis.call("GET", epoch_key)
    end
    return tonumber(epoch) * 1000000 + redis.call("INCR", fence)
end
"""

# KEYS[1]: the name's fence counter; KEYS[2]: the epoch key. Returns the token.
NEXT_FENCING_TOKEN = NEXT_TOKEN_FUNCTION + """
return next_token(KEYS[1], KEYS[2])
"""


# A random prefix per process and a counter: unique like a uuid4 per lock, at a
# fraction of its cost (it shows in an uncontended acquire+release).
_PROCESS_NONCE = secrets.token_hex(8)
_tokens = itertools.count(1)


def _new_process_nonce() -> None:
    # A forked child would otherwise hand out its parent's tokens.
    global _PROCESS_NONCE
    _PROCESS_NONCE = secrets.token_hex(8)


os.register_at_fork(after_in_child=_new_process_nonce)


def new_token(owner: str) -> str:
    """A token no other acquisition anywhere will use: nonce, counter and owner."""
    return f"{_PROCESS_NONCE}{next(_tokens):x}:{owner}"


class RedisLockBase(DistributedLock):
    """What every Redis lock shares: the client, the key, the token, the errors."""

    #: Whether acquiring also hands out a fencing token (the broken locks do not:
    #: fencing would hide the failure they are there to show).
    fenced = False

    def __init__(self, name: str, *, client: redis.Redis, lease_ms: int,
                 faults: frozenset[str] = frozenset(), **options) -> None:
        super().__init__(name, **options)
        self.client = client
        self.lease_ms = lease_ms
        self.faults = faults
        self.key = KEY_PREFIX + name
        self.token = new_token(self.owner)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        with self._redis_errors():
            return super().acquire(blocking, timeout)

    def release(self) -> None:
        with self._redis_errors():
            super().release()

    def ensure_held(self) -> None:
        with self._redis_errors():
            super().ensure_held()

    def _still_held(self) -> bool:
        return self.client.get(self.key) == self.token.encode()

    def _take_fencing_token(self) -> None:
        if self.fenced:
            self._fencing_token = int(script(self.client, NEXT_FENCING_TOKEN)(
                keys=[FENCE_PREFIX + self.name, FENCE_EPOCH]))

    def _redis_errors(self):
        return _RedisErrors(self.name)


def script(client: redis.Redis, source: str) -> LuaScript:
    """``source`` for ``client``, made once per client: EVALSHA then sends a hash, not the body."""
    # Kept on the client: one per connection pool, not per lock object.
    cache = client.__dict__.setdefault("_lockshop_scripts", {})
    if source not in cache:
        cache[source] = LuaScript(client, source)
    return cache[source]


class LuaScript:
    """A Lua script run by EVALSHA, loaded on first use (and again after a Redis restart).

    redis-py's own ``Script`` does the same with more checks; calling EVALSHA
    directly saves a tenth of an uncontended acquire+release.
    """

    def __init__(self, client: redis.Redis, source: str) -> None:
        self.client = client
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    def __call__(self, keys=(), args=()):
        try:
            return self.client.evalsha(self.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:  # a new or restarted server
            self.client.script_load(self.source)
            return self.client.evalsha(self.sha, len(keys), *keys, *args)


class _RedisErrors:
    """Turn "Redis cannot be reached" into ``BackendUnavailable``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> None:
        if isinstance(exc, (redis.ConnectionError, redis.TimeoutError)):
            raise BackendUnavailable(self.name, "redis", exc) from exc


class RedisLock(RedisLockBase):
    """SET NX PX to acquire, a Lua compare-and-delete to release, a fencing token."""

    fenced = True

    # KEYS[1]: the lock key; ARGV[1]: our token. Deletes only our own lock.
    COMPARE_AND_DELETE = """
    if redis.call("GET", KEYS[1]) == ARGV[1] then
        return redis.call("DEL", KEYS[1])
    end
    return 0
    """

    # KEYS[1]: the lock key; KEYS[2]: its fence counter; KEYS[3]: the epoch key.
    # ARGV[1]: our token; ARGV[2]: lease in ms. SET NX PX and, if it worked, the
    # next fencing token: one round trip. Returns the token, or 0 if not acquired.
    ACQUIRE_WITH_TOKEN = NEXT_TOKEN_FUNCTION + """
    if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
        return 0
    end
    return next_token(KEYS[2], KEYS[3])
    """

    def _try_acquire(self) -> bool:
        token = script(self.client, self.ACQUIRE_WITH_TOKEN)(
            keys=[self.key, FENCE_PREFIX + self.name, FENCE_EPOCH], args=[self.token, self.lease_ms])
        if not token:
            return False
        self._fencing_token = int(token)
        return True

    def _release(self) -> None:
        if not script(self.client, self.COMPARE_AND_DELETE)(keys=[self.key], args=[self.token]):
            raise LockLost(self.name, f"the {self.lease_ms} ms lease expired before release")


class RedisLockFactory(LockFactory):
    lock_class = RedisLock

    def __init__(self, strategy: Strategy, backends: Backends, **options) -> None:
        if not backends.redis_url:
            raise ValueError("Redis locks need a Redis URL")
        super().__init__(strategy, backends, **options)
        # Short socket timeouts: a Redis that is down must become a quick 503,
        # not a request that hangs.
        self.client = redis.Redis.from_url(backends.redis_url, socket_timeout=2,
                                           socket_connect_timeout=1)

    def lock(self, name: str, *, timeout: float = 5.0) -> RedisLockBase:
        return self.lock_class(name, client=self.client, lease_ms=self.backends.lease_ms,
                               faults=frozenset(self.backends.faults),
                               strategy=self.strategy.name, timeout=timeout)

    def available(self) -> bool:
        try:
            return bool(self.client.ping())
        except redis.RedisError:
            return False

    def close(self) -> None:
        self.client.close()
