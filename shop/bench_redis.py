"""``lockshop bench redis``: the Redis locks against a raw loop and other libraries.

Two measures, on Redis servers of its own (one, plus five for Redlock):

* **uncontended**: acquire+release pairs per second in one process, on one
  key, for a raw ``SET NX PX`` + ``DEL`` loop (the ceiling: one round trip
  each), each of our correct Redis locks, redis-py's ``Lock`` and
  python-redis-lock; and Redlock over five servers against pottery's.
* **contended**: 8 processes, each in a loop of acquire, ``GET`` a counter,
  ``SET`` it plus one, release. Sections per second over all of them, and
  the time each acquire waited (p50, p99, max: a starved waiter shows in the
  max). The counter must equal the number of sections: a lock that let two
  in would lose increments, and the row says so.

Figures are printed and written as JSON; tests never assert them.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

import redis

import locks
from locks import Backends

from .servers import RedisServer
from .table import format_table

OURS = ("redis", "redis_reentrant", "redis_watchdog", "redis_fair")
LEASE_MS = 10_000
CONTENDED_PROCESSES = 8


@dataclass
class Figures:
    measure: str
    lock: str
    per_second: float
    p50_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    lost_increments: int | None = None


# --- the locks, behind one tiny interface: make(name) -> (acquire, release) --------

def make_lock_maker(kind: str, url: str, urls: tuple[str, ...]):
    """A function name -> (acquire, release) for ``kind``, built in the calling process."""
    if kind == "raw SET NX PX + DEL":
        client = redis.Redis.from_url(url)

        def raw(name):
            token = uuid.uuid4().hex
            return (lambda: client.set(name, token, nx=True, px=LEASE_MS) or _spin(
                lambda: client.set(name, token, nx=True, px=LEASE_MS)),
                    lambda: client.delete(name))
        return raw
    if kind == "redis-py Lock":
        client = redis.Redis.from_url(url)

        def redis_py(name):
            # sleep=0.001: its default 0.1 s would cap a waiter at 10 tries a second.
            lock = client.lock(name, timeout=LEASE_MS / 1000, sleep=0.001, blocking_timeout=30)
            return lock.acquire, lock.release
        return redis_py
    if kind == "python-redis-lock":
        import redis_lock
        client = redis.Redis.from_url(url)

        def python_redis_lock(name):
            lock = redis_lock.Lock(client, name, expire=LEASE_MS // 1000)
            # It refuses to wait longer than its lease.
            return (lambda: lock.acquire(timeout=LEASE_MS // 1000)), lock.release
        return python_redis_lock
    if kind == "pottery Redlock":
        from pottery import Redlock
        masters = {redis.Redis.from_url(u) for u in urls}

        def pottery(name):
            lock = Redlock(key=name, masters=masters, auto_release_time=LEASE_MS / 1000)
            return lock.acquire, lock.release
        return pottery
    factory = locks.open_factory(kind, Backends(redis_url=url, redis_urls=urls,
                                                lease_ms=LEASE_MS))

    def ours(name):
        lock = factory.lock(name, timeout=30)
        return lock.acquire, lock.release
    return ours


def _spin(attempt) -> bool:
    while not attempt():
        time.sleep(0.0005)
    return True


# --- uncontended -------------------------------------------------------------------

def uncontended(kind: str, url: str, urls: tuple[str, ...], seconds: float) -> Figures:
    make = make_lock_maker(kind, url, urls)
    name = f"bench:{uuid.uuid4().hex[:8]}"
    pairs = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        acquire, release = make(name)
        acquire()
        release()
        pairs += 1
    return Figures("uncontended pairs/s", kind, round(pairs / seconds, 1))


# --- contended ---------------------------------------------------------------------

def _contended_worker(kind: str, url: str, urls: tuple[str, ...], name: str,
                      start_at: float, seconds: float) -> tuple[int, list[float]]:
    make = make_lock_maker(kind, url, urls)
    client = redis.Redis.from_url(url)
    counter = f"{name}:counter"
    waits: list[float] = []
    while time.time() < start_at:
        time.sleep(0.001)
    deadline = start_at + seconds
    while time.time() < deadline:
        acquire, release = make(name)
        asked = time.perf_counter()
        acquire()
        waits.append(time.perf_counter() - asked)
        value = int(client.get(counter) or 0)  # the read-modify-write under the lock
        client.set(counter, value + 1)
        release()
    return len(waits), waits


def contended(kind: str, url: str, urls: tuple[str, ...], seconds: float) -> Figures:
    name = f"bench:{uuid.uuid4().hex[:8]}"
    context = multiprocessing.get_context("spawn")  # no state shared with this process
    start_at = time.time() + 3.0  # time for every process to start and connect
    with context.Pool(CONTENDED_PROCESSES) as pool:
        results = pool.starmap(_contended_worker, [(kind, url, urls, name, start_at, seconds)]
                               * CONTENDED_PROCESSES)
    sections = sum(n for n, _ in results)
    waits = sorted(w for _, ws in results for w in ws)
    counted = int(redis.Redis.from_url(url).get(f"{name}:counter") or 0)
    return Figures("contended sections/s", kind, round(sections / seconds, 1),
                   p50_ms=round(1000 * statistics.median(waits), 2),
                   p99_ms=round(1000 * waits[int(0.99 * (len(waits) - 1))], 2),
                   max_ms=round(1000 * waits[-1], 2), lost_increments=sections - counted)


def bench_redis(*, seconds: float = 3.0, output: Path) -> list[Figures]:
    runtime = Path(tempfile.mkdtemp(prefix="lockshop-bench-redis-"))
    figures: list[Figures] = []
    try:
        with ExitStack() as stack:
            url = stack.enter_context(RedisServer(runtime, "redis")).url
            urls = tuple(stack.enter_context(RedisServer(runtime, f"redlock-{n}")).url
                         for n in range(1, 6))
            for kind in ("raw SET NX PX + DEL", *OURS, "redis-py Lock", "python-redis-lock",
                         "redlock", "pottery Redlock"):
                _say(f"uncontended: {kind}…")
                figures.append(uncontended(kind, url, urls, seconds))
            for kind in (*OURS, "redis-py Lock", "python-redis-lock"):
                _say(f"contended, {CONTENDED_PROCESSES} processes: {kind}…")
                figures.append(contended(kind, url, urls, seconds))
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    _report(figures, output, seconds)
    return figures


def _report(figures: list[Figures], output: Path, seconds: float) -> None:
    def show(value):
        return "-" if value is None else value

    print()
    print(format_table(("measure", "lock", "per second", "wait p50 ms", "p99 ms", "max ms",
                        "lost increments"),
                       [(f.measure, f.lock, f.per_second, show(f.p50_ms), show(f.p99_ms),
                         show(f.max_ms), show(f.lost_increments)) for f in figures]))
    raw = next(f.per_second for f in figures if f.lock == "raw SET NX PX + DEL")
    ours = {f.lock: f for f in figures if f.measure.startswith("uncontended")}
    print("\nuncontended, as a share of the raw loop: " + ", ".join(
        f"{k} {ours[k].per_second / raw:.2f}" for k in OURS))
    print(f"Redlock over 5 servers vs pottery: "
          f"{ours['redlock'].per_second / ours['pottery Redlock'].per_second:.1f}x")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps({
        "benchmark": "redis locks", "seconds_per_measure": seconds,
        "contended_processes": CONTENDED_PROCESSES,
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                    "platform": platform.platform()},
        "figures": [asdict(f) for f in figures]}, indent=2) + "\n")
    print(f"written to {output}")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
