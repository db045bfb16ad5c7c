"""The lock contract: what every strategy promises, tested on every strategy.

``CONTRACT_STRATEGIES`` is every registered lock strategy but the ones broken
on purpose (their own tests show how each breaks), so a new strategy is held
to the contract as soon as it is registered. Each is opened on real backends:
a SQLite file, Redis servers and a ZooKeeper server started by the fixtures.
The base class's own timeout loop is tested with an injected clock, so no
test sleeps to measure time.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import locks
from helpers import require_zookeeper
from locks import (
    DistributedLock,
    LockLost,
    LockNotAcquired,
    LockNotOwned,
    MetricsRegistry,
    Strategy,
    UnknownStrategy,
)
from lockshop.cluster.zookeeper_servers import ZooKeeperServer

#: Every lock strategy but those broken on purpose.
CONTRACT_STRATEGIES = [s.name for s in locks.all_strategies() if not s.family.endswith("-broken")]
#: Those that exclude other threads of the same process (all but ``none``).
EXCLUSIVE_IN_PROCESS = [name for name in CONTRACT_STRATEGIES if locks.get(name).expected_correct(1)]


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory):
    """One ZooKeeper server for this module (over the one per test of the conftest):
    every test here names a lock of its own and hurts no server, and starting and
    stopping a server for each of its 64 ZooKeeper tests took about 25 s."""
    require_zookeeper()
    with ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")) as server:
        yield server


@pytest.fixture(params=CONTRACT_STRATEGIES)
def factory(request, open_lock_factory):
    return open_lock_factory(request.param)


def unique_name() -> str:
    return f"test:{time.monotonic_ns()}"


# --- every strategy -----------------------------------------------------------------

def test_acquire_and_release(factory):
    lock = factory.lock(unique_name())
    assert not lock.held
    assert lock.acquire() is True
    assert lock.held
    lock.release()
    assert not lock.held


def test_release_without_acquire_names_the_lock(factory):
    lock = factory.lock("test:never-acquired")
    with pytest.raises(LockNotOwned) as raised:
        lock.release()
    assert raised.value.name == "test:never-acquired"
    assert "test:never-acquired" in str(raised.value)


def test_with_releases_even_when_the_body_fails(factory):
    lock = factory.lock(unique_name())
    with pytest.raises(KeyError):
        with lock:
            assert lock.held
            raise KeyError("the body failed")
    assert not lock.held
    assert factory.lock(lock.name).acquire(blocking=False)


def test_a_lock_object_is_acquired_twice_only_if_reentrant(factory):
    lock = factory.lock(unique_name())
    lock.acquire()
    if not lock.reentrant:
        with pytest.raises(RuntimeError):
            lock.acquire()
        lock.release()
        return
    assert lock.acquire()  # re-entry: counted, so it takes two releases
    lock.release()
    assert lock.held
    lock.release()
    assert not lock.held


def test_ensure_held_raises_lock_lost_after_release(factory):
    lock = factory.lock(unique_name())
    with lock:
        lock.ensure_held()
    with pytest.raises(LockLost):
        lock.ensure_held()


def test_metrics_count_acquisitions_and_releases(factory):
    def counts() -> tuple[int, ...]:
        seen = locks.metrics.snapshot().get(factory.strategy.name)
        if seen is None:
            return (0, 0, 0, 0)
        return (seen["acquisitions"], seen["releases"], seen["wait_seconds"]["count"],
                seen["hold_seconds"]["count"])

    before = counts()
    name = unique_name()
    for _ in range(3):
        with factory.lock(name):
            pass
    assert [after - b for after, b in zip(counts(), before, strict=True)] == [3, 3, 3, 3]


# --- mutual exclusion, and the negative control ------------------------------------------

def racy_increments(factory, threads: int = 8, rounds: int = 5) -> int:
    """Threads do read, pause, write on a shared counter under the lock; return the total."""
    counter = {"value": 0}
    name = unique_name()
    start = threading.Barrier(threads)

    def worker():
        start.wait()
        for _ in range(rounds):
            with factory.lock(name, timeout=30):
                seen = counter["value"]
                time.sleep(0.001)  # a window in time, as the business delay widens it
                counter["value"] = seen + 1

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return counter["value"]


@pytest.mark.parametrize("name", EXCLUSIVE_IN_PROCESS)
def test_exclusive_strategies_lose_no_update(open_lock_factory, name):
    assert racy_increments(open_lock_factory(name)) == 8 * 5


def test_no_lock_loses_updates(open_lock_factory):
    # The negative control: the same workload without exclusion loses updates.
    assert racy_increments(open_lock_factory("none")) < 8 * 5


def in_another_thread(function):
    """Run ``function`` in another thread (another owner, for reentrant locks) and return."""
    result = {}

    def run():
        try:
            result["value"] = function()
        except Exception as error:  # noqa: BLE001 - handed back to the test
            result["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


@pytest.mark.parametrize("name", EXCLUSIVE_IN_PROCESS)
def test_a_held_lock_refuses_others_until_released(open_lock_factory, name):
    factory = open_lock_factory(name)
    holder = factory.lock(unique_name())
    holder.acquire()
    other = factory.lock(holder.name)
    assert in_another_thread(lambda: other.acquire(blocking=False)) is False
    assert in_another_thread(lambda: other.acquire(timeout=0.05)) is False

    def with_block():
        with factory.lock(holder.name, timeout=0.01):
            pass

    with pytest.raises(LockNotAcquired) as raised:
        in_another_thread(with_block)
    assert raised.value.timeout == 0.01
    holder.release()
    assert in_another_thread(lambda: other.acquire(blocking=False)) is True
    in_another_thread(other.release)


@pytest.mark.parametrize("name", EXCLUSIVE_IN_PROCESS)
def test_a_waiter_gets_the_lock_when_it_is_released(open_lock_factory, name):
    factory = open_lock_factory(name)
    holder = factory.lock(unique_name())
    holder.acquire()
    got = threading.Event()

    def waiter():
        if factory.lock(holder.name, timeout=10).acquire():
            got.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    assert not got.wait(0.05)
    holder.release()
    thread.join(10)
    assert got.is_set()


# --- the base class's timeout loop, with time injected -------------------------------------

class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """The lock's ``sleep``: no time passes but the clock's."""
        self.sleeps.append(seconds)
        self.now += seconds


class ScriptedLock(DistributedLock):
    """Refuses the first ``refusals`` attempts: tests the base loop, not a backend."""

    def __init__(self, name: str, refusals: int, **options) -> None:
        super().__init__(name, **options)
        self.refusals = refusals
        self.attempts = 0
        self.released = 0

    def _try_acquire(self) -> bool:
        self.attempts += 1
        return self.attempts > self.refusals

    def _release(self) -> None:
        self.released += 1


def test_base_waits_with_growing_pauses_until_it_gets_the_lock():
    clock = FakeClock()
    lock = ScriptedLock("x", refusals=5, clock=clock, sleep=clock.advance, timeout=10)
    assert lock.acquire()
    assert lock.attempts == 6
    assert len(clock.sleeps) == 5
    # Backoff: later pauses are longer on average than the first (jitter is ±50%).
    assert clock.sleeps[-1] > clock.sleeps[0]
    assert max(clock.sleeps) <= lock.max_poll_interval * 1.5


def test_base_gives_up_at_the_timeout_and_counts_it():
    clock = FakeClock()
    registry = MetricsRegistry()
    lock = ScriptedLock("x", refusals=10**9, clock=clock, sleep=clock.advance, timeout=0.5,
                        strategy="scripted", metrics=registry)
    assert lock.acquire() is False
    assert clock.now == pytest.approx(0.5)
    assert registry.snapshot()["scripted"]["timeouts"] == 1
    assert not lock.held


def test_non_blocking_acquire_makes_exactly_one_attempt():
    clock = FakeClock()
    lock = ScriptedLock("x", refusals=1, clock=clock, sleep=clock.advance)
    assert lock.acquire(blocking=False) is False
    assert lock.attempts == 1
    assert clock.sleeps == []


def test_wait_and_hold_times_come_from_the_clock():
    clock = FakeClock()
    registry = MetricsRegistry()
    lock = ScriptedLock("x", refusals=0, clock=clock, sleep=clock.advance, strategy="s",
                        metrics=registry)
    lock.acquire()
    clock.now += 2.0
    lock.release()
    hold = registry.snapshot()["s"]["hold_seconds"]
    assert hold["sum"] == pytest.approx(2.0)
    assert hold["max"] == pytest.approx(2.0)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        ScriptedLock("", refusals=0)
    with pytest.raises(ValueError):
        ScriptedLock("x", refusals=0, timeout=-1)


# --- the registry ------------------------------------------------------------------------

def test_unknown_strategy_names_the_known_ones():
    with pytest.raises(UnknownStrategy) as raised:
        locks.get("no-such-lock")
    assert "none" in raised.value.known and "local" in str(raised.value)


def test_names_are_unique():
    with pytest.raises(ValueError):
        locks.register(Strategy(name="none", family="x", summary="", factory="x:y",
                                correct_across_instances=True))


def test_local_is_expected_correct_in_one_process_only():
    local = locks.get("local")
    assert local.expected_correct(1) is True
    assert local.expected_correct(3) is False
    assert locks.get("none").expected_correct(1) is False


@pytest.mark.parametrize("name", EXCLUSIVE_IN_PROCESS)
def test_two_asyncio_tasks_on_one_thread_are_two_owners(open_lock_factory, name):
    """Re-entry is for the same thread *or task*: a task may re-enter its own
    hold, but another task of the same event loop is refused."""
    factory = open_lock_factory(name)
    lock_name = unique_name()
    first_holds = asyncio.Event()
    second_done = asyncio.Event()
    seen = {}

    async def first():
        holder = factory.lock(lock_name)
        seen["first"] = holder.acquire(blocking=False)
        if holder.reentrant:
            again = factory.lock(lock_name)
            seen["first again"] = again.acquire(blocking=False)
            again.release()
        first_holds.set()
        await second_done.wait()
        holder.release()

    async def second():
        await first_holds.wait()
        seen["second"] = factory.lock(lock_name).acquire(blocking=False)
        second_done.set()

    async def both():
        await asyncio.gather(first(), second())

    asyncio.run(both())
    assert seen["first"] is True
    assert seen.get("first again", True) is True
    assert seen["second"] is False
