"""Measured lessons (A0, A4): what a lock costs, side by side, in one run.

Figures move with the machine; what the lab judges is which way they point,
never how large they are.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

import redis

from locks.redis_fair import FairRedisLock
from locks.redis_lock import RedisLock
from lockshop.cluster.zookeeper_servers import four_letter_word
from lockshop.turns import overall, take_turns
from lockshop.workshop.staging.record import Lab
from shop.i18n import N_, _, yes_no

SECONDS = 1.0
#: How many turns the locks of a comparison take (``lockshop.turns`` says why).
TURNS = 10


def listed(items) -> str:
    """Figures side by side, as an observation says them: "a; b" in English."""
    # TRANSLATORS: between the figures of an observation ("redis 99 pairs/s; table 12 pairs/s").
    return _("; ").join(str(item) for item in items)


def per_second(name: str, rate: float) -> str:
    return _("%(name)s %(rate)s pairs/s", name=name, rate=f"{rate:,.0f}")


def one_pair(factory) -> Callable[[], None]:
    """One uncontended acquire + release of product:1 with ``factory``'s lock."""
    def pair() -> None:
        lock = factory.lock("product:1")
        lock.acquire()
        lock.release()
    return pair


def stage_cost(run) -> None:
    redis_server, = run.parts.redis()
    zk = run.parts.zookeeper()
    run.measure("redis, zk_fair, table", _("one thread, uncontended acquire + release, "
                                           "%(seconds)s s each in %(turns)s turns, on this "
                                           "machine's servers",
                                           seconds=f"{SECONDS:g}", turns=TURNS))
    url = f"sqlite:///{run.parts.folder(run.lab.name) / 'locks.db'}"
    turns = take_turns({
        "redis": one_pair(run.open_locks("redis", redis_url=redis_server.url)),
        "zk_fair": one_pair(run.open_locks("zk_fair", zk_hosts=zk.address)),
        "table (SQLite)": one_pair(run.open_locks("table", database_url=url)),
    }, SECONDS, TURNS)
    figures = {name: overall(turns_of_lock).per_second for name, turns_of_lock in turns.items()}
    fastest = max(figures, key=figures.get)
    run.check(_("lock and unlock product:1 as fast as one thread can, with each lock"),
              expected=_("Redis the fastest (memory, one round trip each way)"),
              observed=listed(per_second(name, rate) for name, rate in figures.items()),
              agrees=fastest == "redis")
    run.check(_("what each costs besides speed"),
              expected=_("ZooKeeper: a quorum write per step, and a session that frees a dead "
                         "holder's lock; the database: nothing new to run"),
              observed=_("ZooKeeper at %(share)s of Redis's rate (C43 counts its writes; C18 "
                         "shows what they buy)",
                         share=f"{figures['zk_fair'] / figures['redis']:.0%}"),
              agrees=figures["zk_fair"] < figures["redis"])


def stage_zookeeper_writes(run) -> None:
    redis_server, = run.parts.redis()
    zk = run.parts.zookeeper()
    run.measure("zk_fair, redis", _("count ZooKeeper's transactions (its zxid) across "
                                    "%(seconds)s s of lock + unlock, and compare the rate "
                                    "with Redis's", seconds=f"{SECONDS:g}"))
    factory = run.open_locks("zk_fair", zk_hosts=zk.address)
    zk_pair = one_pair(factory)
    take_turns({"zk_fair": zk_pair}, 0.2, TURNS)  # the lock's parent node exists first
    before = _zxid(zk.port)
    # Redis's turns write nothing to ZooKeeper: the count is zk_fair's alone.
    turns = take_turns({
        "zk_fair": zk_pair,
        "redis": one_pair(run.open_locks("redis", redis_url=redis_server.url)),
    }, SECONDS, TURNS)
    on_zookeeper, on_redis = overall(turns["zk_fair"]), overall(turns["redis"])
    time.sleep(0.2)  # the last delete's answer is not waited for
    writes = _zxid(zk.port) - before
    pairs = on_zookeeper.times
    run.check(_("%(pairs)s lock + unlock pairs on zk_fair", pairs=pairs),
              expected=_("two writes each (create, then delete), each a quorum write that "
                         "ZooKeeper fsyncs before it answers"),
              observed=_("%(writes)s transactions: %(per_pair)s per pair", writes=writes,
                         per_pair=f"{writes / pairs:.2f}"),
              agrees=abs(writes / pairs - 2) < 0.05)
    zk_rate, redis_rate = on_zookeeper.per_second, on_redis.per_second
    run.check(_("the same loop on Redis"),
              expected=_("Redis faster: frequent locking loads ZooKeeper's write path"),
              observed=_("zk_fair %(zk)s pairs/s, redis %(redis)s pairs/s",
                         zk=f"{zk_rate:,.0f}", redis=f"{redis_rate:,.0f}"),
              agrees=redis_rate > zk_rate)


# --- C34: polling against a queue --------------------------------------------------------------

CONTENDERS = 6


class Unluckiest(NamedTuple):
    """The contender that saw the most sections go ahead of it while it waited: how many,
    how long it waited, the requests it sent to Redis meanwhile; and the sections in all."""

    overtaken: int
    wait_ms: float
    requests: int
    sections: int


def contended(factory, seconds: float = 1.5) -> Unluckiest:
    """CONTENDERS threads take turns on one lock for ``seconds``, holding it 2 ms each.

    Judged by the sections that went ahead of a waiter, not by the longest wait in
    milliseconds: a stall of the machine lengthens every wait, but a queued waiter is
    passed only until it is starving, however long that takes (with a core kept busy, a
    stall made the queued lock's longest wait 405 ms, more than half the polling lock's
    760; the sections that went ahead measured 7 to 11 queued, 206 to 331 polling)."""
    waits: list[tuple[int, float, int]] = []
    taken = [0]  # sections begun so far, in all threads
    counting = threading.Lock()
    deadline = time.monotonic() + seconds

    def contender() -> None:
        while time.monotonic() < deadline:
            requests = [0]
            lock = _counting_requests(factory.lock("product:1", timeout=10), requests)
            with counting:
                before = taken[0]
            asked = time.monotonic()
            lock.acquire()
            waited = time.monotonic() - asked
            with counting:
                ahead = taken[0] - before
                taken[0] += 1
            waits.append((ahead, waited * 1000, requests[0]))
            time.sleep(0.002)
            lock.release()

    threads = [threading.Thread(target=contender) for _ in range(CONTENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    overtaken, wait_ms, requests = max(waits)
    return Unluckiest(overtaken, wait_ms, requests, len(waits))


def _counting_requests(lock, requests: list[int]):
    """Count the lock's requests while it waits: each attempt is a script sent to Redis,
    and so is each BLPOP of a queued waiter (a polling waiter's pause is a sleep)."""
    def counted(step):
        def run(*args):
            requests[0] += 1
            return step(*args)
        return run
    lock._try_acquire = counted(lock._try_acquire)
    if getattr(lock, "wake", None):  # the queued lock waits on its own list with BLPOP
        lock._wait_for_release = counted(lock._wait_for_release)
    return lock


def stage_polling(run) -> None:
    server, = run.parts.redis()
    run.measure("redis, redis_fair", _("%(threads)s threads take turns on one lock for 1.5 s, "
                                       "2 ms each: the polling lock, then the queued one",
                                       threads=CONTENDERS))
    polling = contended(run.open_locks("redis", redis_url=server.url))
    queued = contended(run.open_locks("redis_fair", redis_url=server.url))
    figures = listed(_("%(name)s: the unluckiest waiter saw %(overtaken)s sections go ahead "
                       "of it, waited %(wait)s ms and sent %(requests)s requests (%(sections)s "
                       "sections in all)", name=_(name), overtaken=seen.overtaken,
                       wait=f"{seen.wait_ms:,.0f}", requests=seen.requests,
                       sections=seen.sections)
                     for name, seen in ((N_("redis (polling)"), polling),
                                        (N_("redis_fair (queued)"), queued)))
    run.check(_("the most sections that went ahead of one waiter"),
              expected=_("the polling lock's unlucky waiter is passed far more often (over "
                         "twice): its retries lose the race again and again, where a queued "
                         "waiter that has waited %(starving)s ms is handed the lock",
                         starving=FairRedisLock.starving_after_ms),
              observed=figures, agrees=polling.overtaken > 2 * queued.overtaken)
    run.check(_("requests that waiter sent to Redis (attempts, and a queued waiter's BLPOPs)"),
              expected=_("the polling waiter kept asking while it waited; a queued waiter "
                         "sleeps until it is woken"),
              observed=_("%(polling)s against %(queued)s", polling=polling.requests,
                         queued=queued.requests),
              agrees=polling.requests > queued.requests)


# --- C37: WATCH/MULTI against Lua ----------------------------------------------------------------

KEY = "lockshop:lock:product:1"


def release_by_watch(client: redis.Redis, token: str, meddle=None) -> tuple[bool, int]:
    """Article A2's release: WATCH the key, GET it, and DEL it in MULTI/EXEC if it is
    ours; retry when EXEC is refused. (released, attempts)"""
    attempts = 0
    with client.pipeline() as pipe:
        while True:
            attempts += 1
            try:
                pipe.watch(KEY)
                if pipe.get(KEY) != token.encode():
                    return False, attempts
                if meddle is not None and attempts == 1:
                    meddle()  # another client touches the key between GET and EXEC
                pipe.multi()
                pipe.delete(KEY)
                pipe.execute()
                return True, attempts
            except redis.WatchError:
                continue


def stage_watch_release(run) -> None:
    server, = run.parts.redis()
    client, other = redis.Redis(port=server.port), redis.Redis(port=server.port)
    run.measure(_("WATCH/MULTI release, Lua release"),
                _("the article's optimistic release, and one script, on the same Redis"))
    client.set(KEY, "A", px=10_000)
    released, attempts = release_by_watch(client, "A", meddle=lambda: other.pexpire(KEY, 10_000))
    run.check(_("A releases with WATCH/MULTI; another client renews the key between A's GET "
                "and EXEC"), expected=_("EXEC is refused (the key changed) and A tries again"),
              observed=_("released: %(released)s after %(attempts)s attempts",
                         released=yes_no(released), attempts=attempts),
              agrees=released and attempts == 2)
    # Both ways take the lock the same way (SET NX PX) on clients of the same kind, so
    # that what differs is the release alone: WATCH, GET, then MULTI/DEL/EXEC in one
    # round trip, against one script (the project's compare-and-delete).
    counted = RoundTrips.client(server.port)
    compare_and_delete = counted.register_script(RedisLock.COMPARE_AND_DELETE)

    def by_watch() -> None:
        counted.set(KEY, "A", px=10_000)
        release_by_watch(counted, "A")

    def by_lua() -> None:
        counted.set(KEY, "A", px=10_000)
        compare_and_delete(keys=[KEY], args=["A"])

    by_lua()  # the server learns the script here, not in the round trips counted
    trips = {name: RoundTrips.of(counted, way) - 1 for name, way in  # less the SET's
             (("WATCH/MULTI", by_watch), ("Lua", by_lua))}
    # The figures move with the machine (a busy one slows whichever turn runs at a bad
    # moment: the best turn of each is shown); the round trips counted do not, and judge.
    turns = take_turns({"WATCH/MULTI": by_watch, "Lua": by_lua}, seconds=0.5, turns=10)
    rates = {name: max(turn.per_second for turn in of_way) for name, of_way in turns.items()}
    run.check(_("release once each way, counting the client's round trips; then lock and "
                "release in a loop, each way in turn, ten turns of 50 ms (the lock is SET NX "
                "PX both times; the best turn of each is shown)"),
              expected=_("Lua cheaper: one round trip to release, against three (WATCH, GET, "
                         "MULTI/DEL/EXEC) with no conflict at all"),
              observed=_("round trips to release: %(trips)s; %(rates)s",
                         trips=listed(f"{name} {count}" for name, count in trips.items()),
                         rates=listed(per_second(name, rate) for name, rate in rates.items())),
              agrees=trips == {"WATCH/MULTI": 3, "Lua": 1})


class RoundTrips(redis.Connection):
    """A Redis connection that counts its round trips: each send is one (a pipeline's
    MULTI/DEL/EXEC goes out in one send)."""

    sent = 0

    def send_packed_command(self, command, check_health: bool = True) -> None:
        RoundTrips.sent += 1
        super().send_packed_command(command, check_health)

    @staticmethod
    def client(port: int) -> redis.Redis:
        return redis.Redis(connection_pool=redis.ConnectionPool(port=port,
                                                               connection_class=RoundTrips))

    @staticmethod
    def of(client: redis.Redis, step: Callable[[], None]) -> int:
        """The round trips ``step`` makes on ``client`` (its only user meanwhile)."""
        before = RoundTrips.sent
        step()
        return RoundTrips.sent - before


def _zxid(port: int) -> int:
    found = re.search(r"Zxid: (0x[0-9a-f]+)", four_letter_word(port, "srvr"))
    if not found:
        raise RuntimeError("ZooKeeper did not say its zxid (srvr)")
    return int(found.group(1), 16) & 0xFFFFFFFF  # the counter, without the epoch


LABS = (
    Lab("C23", "cost", N_("Redis is fastest, ZooKeeper most reliable, the database simplest: "
        "the cost of each, measured"), ("A0", "A4"), ("redis", "zookeeper"), 4, stage_cost,
        measured=True),
    Lab("C34", "polling", N_("A polling lock is unfair and keeps sending commands while it waits; "
        "a queued lock bounds the wait"), ("A1", "A4"), ("redis",), 4, stage_polling,
        measured=True),
    Lab("C37", "watch_release", N_("A WATCH/MULTI release retries on a conflict, and costs more "
        "than Lua"), ("A2",), ("redis",), 2, stage_watch_release, measured=True),
    Lab("C43", "zookeeper_writes", N_("Every ZooKeeper lock and unlock is a quorum write: "
        "frequent locking loads the ensemble"), ("A4",), ("redis", "zookeeper"), 3,
        stage_zookeeper_writes, measured=True),
)
