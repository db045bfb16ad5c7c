"""The two-mode Redis lock (``redis_two_mode``) on a real redis-server: barging while
no waiter starves, hand-off to the head once one does, and the hard cases (a waiter
that gives up as the lock is handed to it, a lease that runs out with a waiter at the
head, the queue's own keys expiring).

Who starves is decided on the Redis server's clock. The tests make a waiter starve
by moving the time it joined the queue back (the ``since`` hash), or by a threshold
so long that nobody starves: never by sleeping past the threshold.
"""

from __future__ import annotations

import threading

import pytest
import redis

from helpers import wait_for
from locks import LockLost
from locks.redis_two_mode import TwoModeRedisLock

NAME = "two-mode"
QUEUE, SINCE, WOKEN = (f"lockshop:{part}:{NAME}" for part in ("queue", "since", "woken"))
KEY = f"lockshop:lock:{NAME}"
NEVER = 3_600_000  # a threshold nobody reaches in a test: normal mode only


@pytest.fixture
def made(open_lock_factory):
    return open_lock_factory("redis_two_mode", lease_ms=5000)


@pytest.fixture
def client(redis_server) -> redis.Redis:
    return redis.Redis.from_url(redis_server.url)


def new_lock(made, starving_after_ms: int = NEVER, **options) -> TwoModeRedisLock:
    return TwoModeRedisLock(NAME, starving_after_ms=starving_after_ms,
                            **{**made.lock_arguments(), **options})


def queued(lock: TwoModeRedisLock) -> TwoModeRedisLock:
    """``lock`` after one attempt that found the lock held: it is in the queue."""
    assert not lock._try_acquire()
    return lock


def starve(client: redis.Redis, lock: TwoModeRedisLock) -> None:
    """Make ``lock``'s waiter look as if it joined the queue a second ago."""
    joined = int(client.hget(SINCE, lock.token))
    client.hset(SINCE, lock.token, joined - 1000)


def wake_list(client: redis.Redis, lock: TwoModeRedisLock) -> list[int]:
    return [int(m) for m in client.lrange(f"lockshop:wake:{lock.token}", 0, -1)]


def test_normal_mode_lets_a_newcomer_barge_and_wakes_a_sleeping_head_once(made, client):
    holder = new_lock(made)
    assert holder.acquire(blocking=False)
    first, second = queued(new_lock(made)), queued(new_lock(made))
    assert first._awake_for is not None  # the head: awake, it asks again by itself
    assert second._awake_for is None  # behind it: asleep until told
    holder.release()
    assert client.get(KEY) is None
    assert wake_list(client, first) == [] and wake_list(client, second) == []  # none woken
    newcomer = new_lock(made)
    assert newcomer.acquire(blocking=False)  # past the queue: nobody starves
    newcomer.release()
    assert first.acquire(blocking=False)  # the awake head's next poll finds it free
    assert wake_list(client, second) == []  # still asleep: nobody released since
    first.release()  # `second` has come to the head asleep: told "try now", once
    assert wake_list(client, second) == [0]
    again = new_lock(made)
    assert again.acquire(blocking=False)
    again.release()
    assert wake_list(client, second) == [0]  # told already: not twice
    again = new_lock(made)
    assert again.acquire(blocking=False)
    second._wait_for_release(1)  # it wakes ...
    assert not second._try_acquire()  # ... loses the race, and is the awake head now
    assert second._awake_for is not None
    again.release()
    assert wake_list(client, second) == []  # awake: releases leave it be
    assert second.acquire(blocking=False)
    second.release()


def test_a_starving_head_is_handed_the_lock_and_newcomers_queue(made, client):
    holder = new_lock(made, starving_after_ms=20)
    assert holder.acquire(blocking=False)
    waiter = queued(new_lock(made, starving_after_ms=20))
    starve(client, waiter)
    assert not waiter._try_acquire() and waiter._awake_for is None  # starving: it sleeps
    holder.release()
    assert client.get(KEY).decode() == waiter.token  # handed over, never free
    newcomer = new_lock(made, starving_after_ms=20)
    assert not newcomer.acquire(blocking=False)
    waiter._wait_for_release(1)  # it sleeps on its wake list, which says "you hold it"
    assert waiter.acquire(blocking=False)
    assert waiter.handed_over and not holder.handed_over
    assert waiter.fencing_token > holder.fencing_token
    waiter.ensure_held()
    waiter.release()


def test_a_free_lock_goes_to_the_starving_head_not_to_a_newcomer(made, client):
    """A holder's lease ran out (here: the key deleted) with a starving waiter at the
    head: a newcomer finds the lock free and still may not take it."""
    holder = new_lock(made, starving_after_ms=20)
    assert holder.acquire(blocking=False)
    waiter = queued(new_lock(made, starving_after_ms=20))
    starve(client, waiter)
    client.delete(KEY)
    newcomer = new_lock(made, starving_after_ms=20)
    assert not newcomer._try_acquire()
    assert [t.decode() for t in client.lrange(QUEUE, 0, -1)] == [waiter.token, newcomer.token]
    assert waiter.acquire(blocking=False)
    with pytest.raises(LockLost):
        holder.release()
    waiter.ensure_held()  # the late release did not touch the new holder's key


def test_back_to_normal_once_the_head_has_not_waited_long(made, client):
    # The threshold is the one of the lock object that decides (here, releases).
    holder = new_lock(made, starving_after_ms=20)
    assert holder.acquire(blocking=False)
    starving = queued(new_lock(made))
    fresh = queued(new_lock(made))
    starve(client, starving)
    holder.release()  # starvation mode: handed to the head
    assert starving.acquire(timeout=1)
    starving.release()  # the head now is `fresh`, who has not waited long: normal mode
    assert client.get(KEY) is None
    assert wake_list(client, fresh) == [0]
    assert new_lock(made).acquire(blocking=False)


def test_a_waiter_that_gives_up_as_the_lock_is_handed_to_it_passes_it_on(made, client):
    holder = new_lock(made, starving_after_ms=20)
    assert holder.acquire(blocking=False)
    quitter = queued(new_lock(made, starving_after_ms=20))
    behind = queued(new_lock(made, starving_after_ms=20))
    starve(client, quitter)
    starve(client, behind)
    holder.release()  # handed to the quitter ...
    assert client.get(KEY).decode() == quitter.token
    quitter._gave_up()  # ... whose wait ran out at that very moment
    assert client.get(KEY).decode() == behind.token  # passed on, to the next starving head
    assert client.llen(QUEUE) == 0
    assert wake_list(client, quitter) == []
    assert behind.acquire(timeout=1)
    behind.release()
    assert new_lock(made).acquire(blocking=False)  # nothing left behind


def test_a_timed_out_acquire_leaves_no_trace(made, client):
    holder = new_lock(made)
    assert holder.acquire(blocking=False)
    assert not new_lock(made).acquire(timeout=0.05)
    assert client.llen(QUEUE) == 0 and client.get(WOKEN) is None
    holder.release()
    assert new_lock(made).acquire(blocking=False)


def test_a_waiter_takes_over_when_the_holders_lease_runs_out(open_lock_factory, client):
    made = open_lock_factory("redis_two_mode", lease_ms=300)
    crashed = new_lock(made, starving_after_ms=20)
    assert crashed.acquire(blocking=False)  # and never releases: its process "died"
    waiter = new_lock(made, starving_after_ms=20, lease_ms=5000)  # outlives a slow moment
    assert waiter.acquire(timeout=5)  # no release comes; its alarm or poll finds it free
    assert client.get(KEY).decode() == waiter.token
    with pytest.raises(LockLost):
        crashed.release()
    waiter.ensure_held()
    waiter.release()


def test_the_queue_keys_expire_with_their_waiters(made, client):
    holder = new_lock(made)
    assert holder.acquire(blocking=False)
    waiter = queued(new_lock(made))
    alive_ms = waiter.fallback_poll * 1000 * 3
    for key in (QUEUE, SINCE, f"lockshop:waiting:{NAME}"):
        assert 0 < client.pttl(key) <= alive_ms  # nothing outlives its waiters
    # The waiter dies (never asks again): the queue goes by itself.
    wait_for(lambda: not client.exists(QUEUE, SINCE, f"lockshop:waiting:{NAME}"),
             message="the dead waiter's queue keys to expire")
    holder.release()
    assert client.get(KEY) is None


def test_a_waiter_whose_queue_keys_expired_still_gets_the_lock(made, client):
    holder = new_lock(made)
    assert holder.acquire(blocking=False)
    got: list[bool] = []
    waiter = new_lock(made)
    thread = threading.Thread(target=lambda: got.append(waiter.acquire(timeout=5)))
    thread.start()
    wait_for(lambda: client.llen(QUEUE) == 1)
    client.delete(QUEUE, SINCE, f"lockshop:waiting:{NAME}")  # as if they had expired
    holder.release()  # finds no queue, wakes nobody: the waiter's own poll finds it free
    thread.join()
    assert got == [True]
    waiter.release()


def test_waiters_are_served_in_order_by_hand_off_when_each_head_starves(made, client):
    """Each holder makes the head of the queue starve before it releases: every release
    hands over, and the lock is a first-come-first-served queue."""
    holder = new_lock(made, starving_after_ms=20)
    assert holder.acquire(blocking=False)
    order: list[int] = []

    def starve_the_head() -> None:
        if head := client.lindex(QUEUE, 0):
            client.hset(SINCE, head, int(client.hget(SINCE, head)) - 1000)

    def waiter(n: int) -> None:
        lock = new_lock(made, starving_after_ms=20)
        assert lock.acquire(timeout=10)
        order.append(n)
        starve_the_head()
        lock.release()

    threads = []
    for n in range(5):
        threads.append(threading.Thread(target=waiter, args=(n,)))
        threads[-1].start()
        wait_for(lambda n=n: client.llen(QUEUE) == n + 1)
    starve_the_head()
    holder.release()
    for thread in threads:
        thread.join()
    assert order == list(range(5))  # first come, first served


def test_a_waiter_s_wait_counts_from_when_it_queued(made, client):
    """As Go counts it: a waiter that queued long ago starves as soon as it heads the
    queue, and is handed the lock at the next release."""
    holder = new_lock(made, starving_after_ms=20)
    assert holder.acquire(blocking=False)
    first = queued(new_lock(made, starving_after_ms=20))
    second = queued(new_lock(made, starving_after_ms=20))
    starve(client, first)
    starve(client, second)  # it queued long ago, behind the first
    holder.release()  # handed to the first ...
    assert first.acquire(timeout=1)
    first.release()  # ... and by the first to the second, at once
    assert client.get(KEY).decode() == second.token
    assert second.acquire(timeout=1)
    second.release()


def test_a_negative_threshold_is_refused(made):
    with pytest.raises(ValueError, match="starving_after_ms"):
        new_lock(made, starving_after_ms=-1)


def test_a_waiter_that_gives_up_holding_a_wake_up_passes_it_on(made, client):
    """The lost wake-up. A release frees the lock; the head of the queue, the one waiter
    that would come for it (told "try now", or awake and asking by itself), gives up
    before it asks again (its timeout ran out, or its request failed). Unless its
    leaving passes the wake-up on, nobody is told: the lock sits free while the waiter
    behind sleeps out its fallback (200 ms), or its whole timeout."""
    holder = new_lock(made)
    assert holder.acquire(blocking=False)
    quitter, behind = queued(new_lock(made)), queued(new_lock(made))
    holder.release()  # normal mode: the lock is freed, and the head told "try now" ...
    assert client.get(KEY) is None
    quitter._gave_up()  # ... which gives up before it tries
    assert wake_list(client, behind) == [0]  # the new head is told in its stead
    behind._wait_for_release(1)
    assert behind.acquire(blocking=False)
    behind.release()
