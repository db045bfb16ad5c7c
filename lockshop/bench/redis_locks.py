"""``lockshop bench redis``: the Redis locks against a raw loop and other libraries.

On Redis servers of its own (one, plus five for Redlock), with the harness
of ``lockshop.bench.harness``:

* **uncontended**: a raw ``SET NX PX`` + ``DEL`` loop (the ceiling: one
  round trip each), each of our correct Redis locks, redis-py's ``Lock`` and
  python-redis-lock; and Redlock over five servers against pottery's;
* **contended**: 8 processes, our locks and the two libraries.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import redis

from lockshop.bench.harness import (
    LEASE_MS,
    Endpoints,
    Figures,
    Maker,
    measure,
    rate,
    report,
    servers_of_its_own,
)
from lockshop.cluster.redis_servers import RedisServer
from shop.i18n import _, join

OURS = ("redis", "redis_reentrant", "redis_watchdog", "redis_fair")
RAW = "raw SET NX PX + DEL"


def lock_maker(kind: str, endpoints: Endpoints) -> Maker | None:
    """The Redis peers of our locks, by name; None for a kind that is not one of them."""
    if kind == RAW:
        client = redis.Redis.from_url(endpoints.redis_url)

        def raw(name):
            token = uuid.uuid4().hex
            return (lambda: client.set(name, token, nx=True, px=LEASE_MS) or _spin(
                lambda: client.set(name, token, nx=True, px=LEASE_MS)),
                    lambda: client.delete(name))
        return raw
    if kind == "redis-py Lock":
        client = redis.Redis.from_url(endpoints.redis_url)

        def redis_py(name):
            # sleep=0.001: its default 0.1 s would cap a waiter at 10 tries a second.
            lock = client.lock(name, timeout=LEASE_MS / 1000, sleep=0.001, blocking_timeout=30)
            return lock.acquire, lock.release
        return redis_py
    if kind == "python-redis-lock":
        import redis_lock
        client = redis.Redis.from_url(endpoints.redis_url)

        def python_redis_lock(name):
            lock = redis_lock.Lock(client, name, expire=LEASE_MS // 1000)
            # It refuses to wait longer than its lease.
            return (lambda: lock.acquire(timeout=LEASE_MS // 1000)), lock.release
        return python_redis_lock
    if kind == "pottery Redlock":
        from pottery import Redlock
        masters = {redis.Redis.from_url(u) for u in endpoints.redis_urls}

        def pottery(name):
            lock = Redlock(key=name, masters=masters, auto_release_time=LEASE_MS / 1000)
            return lock.acquire, lock.release
        return pottery
    return None


def _spin(attempt) -> bool:
    while not attempt():
        time.sleep(0.0005)
    return True


def bench_redis(*, seconds: float = 3.0, output: Path) -> list[Figures]:
    with servers_of_its_own("lockshop-bench-redis-") as start:
        url = start(RedisServer, "redis").url
        urls = tuple(start(RedisServer, f"redlock-{n}").url for n in range(1, 6))
        figures = measure(
            Endpoints(url, urls), seconds,
            uncontended_kinds=(RAW, *OURS, "redis-py Lock", "python-redis-lock",
                               "redlock", "pottery Redlock"),
            contended_kinds=(*OURS, "redis-py Lock", "python-redis-lock"))

    def uncontended_rate(kind: str) -> float:
        return rate(figures, "uncontended", kind)

    def ratios() -> list[str]:
        shares = join(f"{k} {uncontended_rate(k) / uncontended_rate(RAW):.2f}" for k in OURS)
        redlock = uncontended_rate("redlock") / uncontended_rate("pottery Redlock")
        return [_("uncontended, as a share of the raw loop: %(shares)s", shares=shares),
                _("Redlock over 5 servers vs pottery: %(ratio)sx", ratio=f"{redlock:.1f}")]

    report("redis locks", figures, output, seconds, ratios)
    return figures
