"""A reentrant lock lets its owner in again, and nobody else: not the next thread
Python gives a dead thread's id to, not the next task at a dead task's address.

Each test is run on every reentrant strategy, on real servers, and once on
the lock that names its owner by thread id (broken on purpose), to show the
test can fail.
"""

from __future__ import annotations

import asyncio
import importlib
import threading

import pytest

import locks
from locks.owner import current_owner
from lockshop.cluster.thread_ids import given_a_dead_threads_id, in_a_thread


def lock_class(strategy: locks.Strategy):
    module, _, factory = strategy.factory.partition(":")
    return getattr(importlib.import_module(module), factory).lock_class


#: Every reentrant strategy that is meant to be correct.
REENTRANT = [s.name for s in locks.all_strategies()
             if lock_class(s).reentrant and not s.family.endswith("-broken")]
THREAD_ID_OWNER = "redis_reentrant_thread_id"


def test_the_reentrant_strategies_are_the_ones_expected():
    assert set(REENTRANT) >= {"redis_reentrant", "zk_fair", "zk_rw"}


@pytest.mark.parametrize("name", [*REENTRANT, THREAD_ID_OWNER])
def test_threads_that_end_holding_the_lock_let_exactly_one_in(open_lock_factory, name):
    factory = open_lock_factory(name)
    first, later = given_a_dead_threads_id(
        lambda: factory.lock("product:1").acquire(blocking=False), later=19)
    assert first is True
    if name == THREAD_ID_OWNER:
        assert all(later)  # the broken owner: each thread given the holder's id walks in
    else:
        assert not any(later)


@pytest.mark.parametrize("name", REENTRANT)
def test_twenty_threads_asking_at_once_let_exactly_one_in(open_lock_factory, name):
    factory = open_lock_factory(name)
    start = threading.Barrier(20)
    taken: list[bool] = []

    def ask() -> None:
        lock = factory.lock("product:1")
        start.wait()
        taken.append(lock.acquire(blocking=False))  # and the thread ends, holding it

    threads = [threading.Thread(target=ask) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert taken.count(True) == 1


@pytest.mark.parametrize("name", REENTRANT)
def test_tasks_that_end_holding_the_lock_let_exactly_one_in(open_lock_factory, name):
    factory = open_lock_factory(name)

    async def one_task_after_another() -> list[bool]:
        taken = []
        for _ in range(20):
            taken.append(await asyncio.create_task(ask()))
        return taken

    async def ask() -> bool:
        return factory.lock("product:1").acquire(blocking=False)

    async def all_at_once() -> list[bool]:
        return list(await asyncio.gather(*(ask() for _ in range(20))))

    assert asyncio.run(one_task_after_another()).count(True) == 1
    assert asyncio.run(all_at_once()).count(False) == 20  # still held by the first task


@pytest.mark.parametrize("name", REENTRANT)
def test_the_same_thread_still_reenters(open_lock_factory, name):
    factory = open_lock_factory(name)
    outer, inner = factory.lock("product:1"), factory.lock("product:1")
    assert outer.acquire(blocking=False) and inner.acquire(blocking=False)
    other, _id = in_a_thread(lambda: factory.lock("product:1").acquire(blocking=False))
    assert other is False
    inner.release()
    outer.release()
    other, _id = in_a_thread(lambda: factory.lock("product:1").acquire(blocking=False))
    assert other is True


def test_an_owner_reads_as_host_pid_and_thread_and_is_never_handed_on():
    name, ident = in_a_thread(current_owner)
    host, pid, thread, _ = name.split(":")
    assert host and pid.isdigit() and int(thread) == ident
    first, later = given_a_dead_threads_id(current_owner, later=4)
    assert len({first, *later}) == 5  # though each was given the first thread's id
    assert current_owner() == current_owner()  # kept with the thread

    async def two_tasks() -> tuple[str, str]:
        async def name() -> str:
            return current_owner()
        return await asyncio.create_task(name()), await asyncio.create_task(name())

    first, second = asyncio.run(two_tasks())
    assert first != second and ":task-" in first
