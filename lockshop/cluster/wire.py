"""A Redis client that lets the grader step in between a lock's commands.

The grader needs nothing from a student's code to find a race: it watches
the commands the lock sends on this client, and acts right after the first
one of a kind that touches the lock's key. Stop the process after the first
write (a crash between ``SETNX`` and ``EXPIRE``), or pause after the first
read (another client's turn between ``GET`` and ``DEL``). One Lua script is
one command, so a lock that does its check and its write in one script
leaves no moment to step into: exactly the articles' point.

A ``WATCH``/``MULTI`` release runs on a pipeline of the same client: its
commands before ``MULTI`` (``WATCH``, ``GET``) are watched as the client's own,
and the transaction is written down as it is sent (``MULTI``, its commands,
``EXEC``). ``sent`` counts every command the client sent, on any key: what a
waiter costs the server while it waits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import redis

#: Commands that write a key (the ones a lock's steps use, and their cousins).
WRITES = frozenset({
    "SET", "SETNX", "SETEX", "PSETEX", "GETSET", "MSET", "INCR", "INCRBY", "DECR",
    "HSET", "HSETNX", "HMSET", "HINCRBY", "HDEL", "DEL", "UNLINK", "EXPIRE", "PEXPIRE",
    "EXPIREAT", "PEXPIREAT", "PERSIST", "LPUSH", "RPUSH", "LPOP", "RPOP",
})
#: Commands that only read a key.
READS = frozenset({
    "GET", "EXISTS", "TYPE", "TTL", "PTTL", "HGET", "HEXISTS", "HGETALL", "HLEN", "HKEYS",
    "HVALS", "MGET", "STRLEN", "LRANGE", "LINDEX",
})
#: Commands that wait in the server until something arrives: a waiter that is told.
BLOCKING = frozenset({
    "BLPOP", "BRPOP", "BLMOVE", "BRPOPLPUSH", "BLMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP",
    "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "WAIT",
})
#: Lua: the script runs inside the server, all at once.
SCRIPTS = frozenset({"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL"})


def keys_of(name: str, args: tuple) -> tuple:
    """The keys a command names (the first argument; a script's KEYS)."""
    if name in SCRIPTS and len(args) >= 3:  # EVALSHA sha numkeys key... arg...
        count = int(args[2])
        return tuple(args[3:3 + count])
    return tuple(args[1:2])


class WatchedRedis(redis.Redis):
    """``redis.Redis`` that calls ``after(kind, command)`` once a command on ``key`` has
    been answered, where kind is "write", "read" or "script"."""

    def __init__(self, *args, key: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.watched_key = key.encode()
        self.after: Callable[[str, str], None] | None = None
        self.commands: list[str] = []
        #: Every command answered, on any key (a transaction: MULTI, its commands, EXEC).
        self.sent = 0
        #: Of those, the ones that wait in the server (``BLOCKING``).
        self.blocking = 0
        #: Of those, the ones that ended with something to take (a wake-up), not at their
        #: timeout.
        self.woken = 0
        #: Called just before a command that waits in the server is sent.
        self.before_blocking: Callable[[], None] | None = None
        #: A command sent on this client is waiting in the server now.
        self.in_blocking_wait = False
        self._guard = threading.Lock()

    @classmethod
    def watching(cls, url: str, key: str, **options) -> WatchedRedis:
        """A client of the server at ``url`` that watches the commands on ``key``."""
        client = cls(connection_pool=redis.ConnectionPool.from_url(url, **options), key=key)
        client.auto_close_connection_pool = True  # its pool is its own: close() closes it
        return client

    def execute_command(self, *args, **options):
        blocking = str(args[0]).upper() in BLOCKING
        if blocking and self.before_blocking is not None:
            self.before_blocking()
        self.in_blocking_wait = blocking
        try:
            answer = super().execute_command(*args, **options)
        finally:
            self.in_blocking_wait = False
        if blocking and answer is not None:
            with self._guard:
                self.woken += 1
        self.saw(args)
        return answer

    def pipeline(self, transaction=True, shard_hint=None) -> WatchedPipeline:
        return WatchedPipeline(self, transaction, shard_hint)

    def saw(self, args: tuple, *, step_in: bool = True) -> None:
        """A command was answered: count it, and step in if it named the watched key."""
        name = str(args[0]).upper()
        with self._guard:
            self.sent += 1
            self.blocking += name in BLOCKING
        if any(_as_bytes(key) == self.watched_key for key in keys_of(name, args)):
            kind = "script" if name in SCRIPTS else "write" if name in WRITES else \
                "read" if name in READS else "other"
            with self._guard:
                self.commands.append(name)
            if step_in and self.after is not None:
                self.after(kind, name)


class WatchedPipeline(redis.client.Pipeline):
    """A pipeline of a ``WatchedRedis``: the commands it runs at once (after ``WATCH``)
    are watched like the client's; a transaction is written down, MULTI to EXEC, once
    it has been answered (refused or not), without stepping in."""

    def __init__(self, client: WatchedRedis, transaction, shard_hint) -> None:
        super().__init__(client.connection_pool, client.response_callbacks, transaction,
                         shard_hint)
        self.client = client

    def immediate_execute_command(self, *args, **options):
        answer = super().immediate_execute_command(*args, **options)
        self.client.saw(args)
        return answer

    def execute(self, raise_on_error: bool = True):
        queued = [args for args, _options in self.command_stack]
        try:
            return super().execute(raise_on_error)
        finally:
            if queued:
                transaction = self.transaction or self.explicit_transaction
                # MULTI and EXEC are said as the key's when the transaction names it.
                key = [self.client.watched_key] if any(
                    _as_bytes(k) == self.client.watched_key
                    for args in queued for k in keys_of(str(args[0]).upper(), args)) else []
                for args in ([("MULTI", *key)] if transaction else []) + queued \
                        + ([("EXEC", *key)] if transaction else []):
                    self.client.saw(args, step_in=False)


def _as_bytes(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()
