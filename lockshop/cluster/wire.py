"""A Redis client that lets the grader step in between a lock's commands.

The grader needs nothing from a student's code to find a race: it watches
the commands the lock sends on this client, and acts right after the first
one of a kind that touches the lock's key. Stop the process after the first
write (a crash between ``SETNX`` and ``EXPIRE``), or pause after the first
read (another client's turn between ``GET`` and ``DEL``). One Lua script is
one command, so a lock that does its check and its write in one script
leaves no moment to step into: exactly the articles' point.
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
        self._guard = threading.Lock()

    @classmethod
    def watching(cls, url: str, key: str, **options) -> WatchedRedis:
        """A client of the server at ``url`` that watches the commands on ``key``."""
        client = cls(connection_pool=redis.ConnectionPool.from_url(url, **options), key=key)
        client.auto_close_connection_pool = True  # its pool is its own: close() closes it
        return client

    def execute_command(self, *args, **options):
        answer = super().execute_command(*args, **options)
        name = str(args[0]).upper()
        if any(_as_bytes(key) == self.watched_key for key in keys_of(name, args)):
            kind = "script" if name in SCRIPTS else "write" if name in WRITES else \
                "read" if name in READS else "other"
            with self._guard:
                self.commands.append(name)
            if self.after is not None:
                self.after(kind, name)
        return answer


def _as_bytes(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()
