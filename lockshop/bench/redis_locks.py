"""``lockshop bench redis``: the Redis locks against a raw loop and other libraries.

On Redis servers of its own (one, plus five for Redlock), with the harness
of ``lockshop.bench.harness``:

* **uncontended**: a raw ``SET NX PX`` + ``DEL`` loop (the ceiling: one
  round trip each), each of our correct Redis locks, redis-py's ``Lock`` and
  python-redis-lock; and Redlock over five servers against pottery's;
* **contended**: 8 processes, our locks and the two libraries.

redis-py's ``Lock`` runs twice: as a user gets it (a waiter sleeps 0.1 s
between attempts, so the holder mostly takes the lock again: many sections a
second, and waits of seconds) and with ``sleep=0.001`` (waiters that ask a
thousand times a second and slow everyone down). The run ends with the goals
of ``redis_two_mode``: at least redis-py's contended throughput with a
longest wait of at most 100 ms, and uncontended within 5% of ``redis``; and
Redlock's, over five servers, at least 0.85 of ``redis`` uncontended. Those
last two are measured on their own: the ten turns of the table cannot tell two
locks 5% apart, so each pair runs side by side in 300 short turns
(``lockshop.turns.side_by_side``).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import redis

from lockshop.bench.harness import (
    LEASE_MS,
    SIDE_BY_SIDE_TURNS,
    Endpoints,
    Figures,
    Maker,
    figure,
    goal,
    measure,
    rate,
    report,
    round_ratios,
    servers_of_its_own,
    side_by_side_goal,
    uncontended_side_by_side,
)
from lockshop.bench.output import say
from lockshop.cluster.redis_servers import RedisServer
from shop.i18n import _, join

OURS = ("redis", "redis_reentrant", "redis_watchdog", "redis_fair", "redis_two_mode")
RAW = "raw SET NX PX + DEL"
REDIS_PY = "redis-py Lock"
REDIS_PY_FAST_POLL = "redis-py Lock, sleep 1 ms"


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
    if kind in (REDIS_PY, REDIS_PY_FAST_POLL):
        client = redis.Redis.from_url(endpoints.redis_url)
        sleep = 0.001 if kind == REDIS_PY_FAST_POLL else 0.1  # 0.1 s is its default

        def redis_py(name):
            lock = client.lock(name, timeout=LEASE_MS / 1000, sleep=sleep, blocking_timeout=30)
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
            uncontended_kinds=(RAW, *OURS, REDIS_PY, "python-redis-lock",
                               "redlock", "pottery Redlock"),
            contended_kinds=(*OURS, REDIS_PY, REDIS_PY_FAST_POLL, "python-redis-lock"))
        say(_("uncontended, %(kind)s and %(peer)s side by side, in %(turns)s turns…",
              kind="redis_two_mode", peer="redis", turns=SIDE_BY_SIDE_TURNS))
        two_mode_by_redis = uncontended_side_by_side("redis_two_mode", "redis",
                                                     Endpoints(url, urls), 2 * seconds)
        say(_("uncontended, %(kind)s and %(peer)s side by side, in %(turns)s turns…",
              kind="redlock", peer="redis", turns=SIDE_BY_SIDE_TURNS))
        redlock_by_redis = uncontended_side_by_side("redlock", "redis", Endpoints(url, urls),
                                                    2 * seconds)

    def uncontended_rate(kind: str) -> float:
        return rate(figures, "uncontended", kind)

    def ratios() -> list[str]:
        shares = join(f"{k} {uncontended_rate(k) / uncontended_rate(RAW):.2f}" for k in OURS)
        redlock = uncontended_rate("redlock") / uncontended_rate("pottery Redlock")
        two_mode = figure(figures, "contended", "redis_two_mode")
        return [_("uncontended, as a share of the raw loop: %(shares)s", shares=shares),
                _("Redlock over 5 servers vs pottery: %(ratio)sx", ratio=f"{redlock:.1f}"),
                goal(_("redis_two_mode contended / redis-py Lock's"), two_mode.per_second
                     / rate(figures, "contended", REDIS_PY), at_least=1.0,
                     rounds=round_ratios(figures, "contended", "redis_two_mode", REDIS_PY)),
                goal(_("redis_two_mode contended, longest wait in any round (ms)"),
                     two_mode.max_ms_any_round, at_most=100),
                goal(_("redis_two_mode uncontended / redis's, side by side in %(turns)s "
                       "turns (redis / redis: %(control)s)", turns=SIDE_BY_SIDE_TURNS,
                       control=f"{two_mode_by_redis.control:.3f}"),
                     two_mode_by_redis.ratio, at_least=0.95),
                side_by_side_goal("redlock", "redis", redlock_by_redis, at_least=0.85)]

    report("redis locks", figures, output, seconds, ratios)
    return figures
