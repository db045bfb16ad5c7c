"""Redlock: one lock over N independent Redis servers (N = 5 by default).

The algorithm, as the Redis documentation gives it:

1. note the time; ask every server, in parallel, for ``SET key token NX PX
   lease``, each with a short timeout so that a dead server costs little.
   "In parallel" without threads: the command is written to all five
   connections first, then the five replies are read, so the whole round
   costs one network round trip, not five (``locks.support.redis_fan_out``,
   which also packs the command once and sends a script by its hash);
2. the lock is ours if a majority (N/2 + 1) said yes and the time that took
   is shorter than the lease: the **validity time** is the lease, less the
   time spent, less an allowance for clock drift between the servers
   (1% of the lease + 2 ms);
3. otherwise release it everywhere (a server may have said yes) and retry;
4. release: compare-and-delete on every server.

The holder may trust the lock only until the validity time runs out;
``ensure_held()`` checks that, so the shop does not commit after it.

How it fails (Kleppmann's critique): the validity time is measured on the
holder's clock, and a pause longer than it leaves two holders, as with one
server; and the servers hand out no common, increasing number, so Redlock
gives no fencing token. Fewer than a majority of servers reachable means no
lock at all: ``BackendUnavailable``, a 503.
"""

from __future__ import annotations

import time

import redis

from .base import DistributedLock
from .errors import BackendUnavailable, LockLost
from .redis_lock import RedisLock
from .redis_support import KEY_PREFIX, describe_token
from .registry import Backends, LockFactory, LockView, Strategy
from .support.redis_fan_out import UNREACHABLE, Servers, fan_out

__all__ = ["UNREACHABLE", "Redlock", "RedlockBase", "RedlockFactory", "fan_out"]

CLOCK_DRIFT_FACTOR = 0.01
CLOCK_DRIFT_MS = 2


class RedlockBase(DistributedLock):
    """The servers' clients, the quorum, the key and a token: a lock over N servers."""

    #: How long one server may take to answer before it counts as down, in seconds (the
    #: factory makes its clients with it). A single Redis lock's clients wait 2 s.
    server_timeout: float = 2.0

    def __init__(self, name: str, *, clients: list[redis.Redis], servers: Servers,
                 lease_ms: int, **options) -> None:
        super().__init__(name, **options)
        self.clients = clients
        #: The same servers, asked all at once on connections of their own (``fan_out``
        #: with less work per server: ``locks.support.redis_fan_out``).
        self.servers = servers
        self.lease_ms = lease_ms
        self.quorum = len(clients) // 2 + 1
        self.key = KEY_PREFIX + name
        self.token = f"{id(self):x}:{time.time_ns()}:{self.owner}"


class Redlock(RedlockBase):
    #: A dead server must cost milliseconds, not the whole validity time.
    server_timeout = 0.1

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self._valid_until = 0.0
        #: What the last acquire measured: the time it took, and the validity left.
        self.elapsed_ms = 0.0
        self.validity_ms = 0.0

    def _try_acquire(self) -> bool:
        started = self._clock()
        answers = self.servers.ask_all("SET", self.key, self.token, "NX", "PX", self.lease_ms)
        elapsed_ms = (self._clock() - started) * 1000
        drift_ms = self.lease_ms * CLOCK_DRIFT_FACTOR + CLOCK_DRIFT_MS
        validity_ms = self.lease_ms - elapsed_ms - drift_ms
        granted = sum(answer not in (None, False) and answer is not UNREACHABLE
                      for answer in answers)
        self.elapsed_ms, self.validity_ms = elapsed_ms, validity_ms
        if granted >= self.quorum and validity_ms > 0:
            self._valid_until = started + validity_ms / 1000
            return True
        self._delete_everywhere()  # some may have said yes: undo them
        reachable = sum(answer is not UNREACHABLE for answer in answers)
        if reachable < self.quorum:
            raise BackendUnavailable(self.name, f"redis ({reachable} of {len(self.clients)} "
                                                f"servers reachable, {self.quorum} needed)")
        return False

    def _release(self) -> None:
        deleted = self._delete_everywhere()
        if deleted < self.quorum:
            raise LockLost(self.name, f"only {deleted} of {len(self.clients)} servers still "
                                      "held it at release")

    def _still_held(self) -> bool:
        return self._clock() < self._valid_until

    def _delete_everywhere(self) -> int:
        answers = self.servers.run_everywhere(RedisLock.COMPARE_AND_DELETE, (self.key,),
                                              (self.token,))
        return sum(answer == 1 for answer in answers)


class RedlockFactory(LockFactory):
    lock_class = Redlock

    def __init__(self, strategy: Strategy, backends: Backends) -> None:
        if len(backends.redis_urls) < 3:
            raise ValueError("Redlock needs at least 3 independent Redis servers "
                             "(LOCKSHOP_REDIS_URLS)")
        super().__init__(strategy, backends)
        timeout = self.lock_class.server_timeout
        self.clients = [redis.Redis.from_url(url, socket_timeout=timeout,
                                             socket_connect_timeout=timeout / 2)
                        for url in backends.redis_urls]
        self.servers = Servers(self.clients)

    def lock_arguments(self) -> dict:
        return {"clients": self.clients, "servers": self.servers,
                "lease_ms": self.backends.lease_ms}

    def available(self) -> bool:
        up = 0
        for client in self.clients:
            try:
                up += bool(client.ping())
            except redis.RedisError:
                pass
        return up >= len(self.clients) // 2 + 1

    def look(self, name: str) -> LockView:
        """Each server's key: the holder is whoever's token a majority of them hold."""
        key = KEY_PREFIX + name
        seen: dict[bytes, int] = {}
        for client in self.clients:
            try:
                token = client.get(key)
            except redis.RedisError:
                continue  # a server down: it holds nothing for anyone
            if token is not None:
                seen[token] = seen.get(token, 0) + 1
        holders = [{**describe_token(token), "servers": f"{count} of {len(self.clients)}",
                    "majority": count > len(self.clients) // 2}
                   for token, count in seen.items()]
        return LockView(f"redis key {key} on {len(self.clients)} servers", holders)

    def close(self) -> None:
        self.servers.close()
        for client in self.clients:
            client.close()
