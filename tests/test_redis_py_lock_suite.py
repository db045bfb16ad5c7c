"""redis-py's own lock tests, as behaviours of the lock contract, on every Redis strategy
that claims to be correct.

redis-py checks its ``Lock`` for what a user of any Redis lock relies on: the key
shows the holder while it holds, and nobody once it released; a second lock on the
name is refused until then; the lease is the one asked for; a blocking acquire gives
up after its timeout, and ``with`` raises when it could not acquire; releasing a lock
one does not hold, or no longer holds, is an error that names the lock, and leaves
the new holder's key alone. Its ``extend`` and ``reacquire`` have no counterpart
here (``redis_watchdog`` and ``redisson`` renew by themselves); what their tests
check, that a lock no longer ours is found out, is ``ensure_held``.

Written for this project's contract (a lock object per hold, ``held``,
``LockNotOwned``, ``LockLost``, ``LockNotAcquired``), each on a real redis-server
started by the fixtures (six for Redlock: the lock's five, and the test's own).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

import locks
from locks import LockError, LockLost, LockNotAcquired, LockNotOwned

#: Every Redis strategy that claims to be correct (the broken ones are "redis-broken").
REDIS_STRATEGIES = [s.name for s in locks.all_strategies() if s.family == "redis"]
LEASE_MS = 10_000
NAME = "foo"
KEY = f"lockshop:lock:{NAME}"


@pytest.fixture(params=REDIS_STRATEGIES)
def strategy_name(request) -> str:
    return request.param


@pytest.fixture
def made(strategy_name, open_lock_factory):
    return open_lock_factory(strategy_name, lease_ms=LEASE_MS)


def servers(made) -> list[redis.Redis]:
    """Every server that keeps the lock's key: Redlock's five, or the one."""
    return list(getattr(made, "clients", None) or [made.client])


def holders(made) -> list[str]:
    """The tokens the backend shows holding the lock (Redlock: on a majority); each
    ends with its owner (``locks.redis_support.new_token``; a re-entrant lock's hash
    is keyed by the owner itself)."""
    view = made.look(NAME)
    return [h["token"] for h in view.holders if h.get("majority", True)]


def held_by(made, lock) -> bool:
    """Whether the backend shows ``lock``'s owner, and only it, holding the lock."""
    tokens = holders(made)
    return len(tokens) == 1 and tokens[0].endswith(lock.owner)


class SomeoneElse:
    """A lock on a name asked for by another owner: a thread of its own, as a
    re-entrant lock would let the same thread in again."""

    def __init__(self, made, name: str = NAME) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1)
        self.lock = self._in_its_thread(made.lock, name)
        self.owner = self.lock.owner

    def _in_its_thread(self, call, *args, **kwargs):
        return self._thread.submit(call, *args, **kwargs).result()

    def acquire(self, **kwargs) -> bool:
        return self._in_its_thread(self.lock.acquire, **kwargs)

    @property
    def held(self) -> bool:
        return self.lock.held

    def ensure_held(self) -> None:
        self._in_its_thread(self.lock.ensure_held)

    def release(self) -> None:
        self._in_its_thread(self.lock.release)
        self._thread.shutdown()


def taken_by_someone_else(made) -> SomeoneElse:
    """Our lease ran out (the key is gone from every server) and someone else took the
    lock: the case redis-py makes by writing another token into the key."""
    for server in servers(made):
        server.delete(KEY)
    other = SomeoneElse(made)
    assert other.acquire(blocking=False)
    return other


def test_lock(made):
    lock = made.lock(NAME)
    assert lock.acquire(blocking=False)
    assert held_by(made, lock)
    lock.release()
    assert holders(made) == []
    assert all(server.exists(KEY) == 0 for server in servers(made))


def test_locked(made):
    lock = made.lock(NAME)
    assert not lock.held
    assert lock.acquire(blocking=False)
    assert lock.held
    lock.release()
    assert not lock.held
    # The first lock is never held again once another one holds the name.
    second = made.lock(NAME)
    assert not lock.held and not second.held
    assert second.acquire(blocking=False)
    assert not lock.held and second.held
    second.release()
    assert not lock.held and not second.held


def test_competing_locks(made):
    first, second = made.lock(NAME), SomeoneElse(made)
    assert first.acquire(blocking=False)
    assert not second.acquire(blocking=False)
    first.release()
    assert second.acquire(blocking=False)
    assert not made.lock(NAME).acquire(blocking=False)
    second.release()


@pytest.mark.parametrize("lease_ms", [10_000, 9_500])
def test_the_lease_is_the_one_asked_for(strategy_name, open_lock_factory, lease_ms):
    """redis-py's timeout, in seconds or a fraction of them: here the lease, in ms."""
    made = open_lock_factory(strategy_name, lease_ms=lease_ms)
    lock = made.lock(NAME)
    assert lock.acquire(blocking=False)
    for server in servers(made):
        assert lease_ms - 2000 < server.pttl(KEY) <= lease_ms
    lock.release()


def test_a_blocking_acquire_gives_up_after_its_timeout(made):
    holder = made.lock(NAME)
    assert holder.acquire(blocking=False)
    waiter = SomeoneElse(made)
    started = time.monotonic()
    assert not waiter.acquire(timeout=0.2)
    assert time.monotonic() - started >= 0.2
    assert not waiter.held
    holder.release()
    assert waiter.acquire(blocking=False)  # its wait left nothing behind that blocks it
    waiter.release()


def test_context_manager(made):
    with made.lock(NAME, timeout=0.2) as lock:
        assert held_by(made, lock)
    assert holders(made) == []


def test_context_manager_raises_when_the_lock_is_not_acquired(made):
    holder = SomeoneElse(made)
    assert holder.acquire(blocking=False)
    with pytest.raises(LockNotAcquired):
        with made.lock(NAME, timeout=0.1):
            pytest.fail("entered a lock someone else holds")
    holder.release()


def test_a_negative_timeout_is_refused(made):
    """redis-py refuses a sleep longer than the timeout; here, a timeout below zero."""
    with pytest.raises(ValueError):
        made.lock(NAME, timeout=-1)


def test_releasing_an_unlocked_lock_raises(made):
    with pytest.raises(LockNotOwned):
        made.lock(NAME).release()


def test_releasing_a_lock_no_longer_owned_raises_and_leaves_the_new_holder_be(made):
    lock = made.lock(NAME)
    assert lock.acquire(blocking=False)
    other = taken_by_someone_else(made)
    with pytest.raises(LockLost):
        lock.release()
    assert not lock.held  # even though it failed, the hold is over
    assert held_by(made, other)  # the late release did not free their lock
    other.ensure_held()
    other.release()


def test_ensure_held_on_an_unlocked_lock_raises(made):
    """redis-py: extending or reacquiring a lock one does not hold is an error."""
    with pytest.raises(LockLost):
        made.lock(NAME).ensure_held()


def test_ensure_held_finds_a_lock_no_longer_owned(made, strategy_name):
    """redis-py: extending or reacquiring a lock whose key holds another token fails.
    Redlock asks no server: by its algorithm the holder trusts its validity time, on
    its own clock, and finds the lock gone once that has run out (moved on here)."""
    now = [1000.0]
    lock = made.lock_class(NAME, clock=lambda: now[0], **made.lock_arguments())
    assert lock.acquire(blocking=False)
    lock.ensure_held()
    other = taken_by_someone_else(made)
    if strategy_name == "redlock":
        lock.ensure_held()  # within its validity time, it cannot tell
        now[0] += LEASE_MS / 1000
    with pytest.raises(LockLost):
        lock.ensure_held()
    other.release()


def test_an_error_names_its_lock(made):
    lock = made.lock("a-lock-of-its-own")
    with pytest.raises(LockError, match="a-lock-of-its-own"):
        lock.release()
    other = SomeoneElse(made, "a-lock-of-its-own")
    assert other.acquire(blocking=False)
    with pytest.raises(LockError, match="a-lock-of-its-own"):
        with made.lock("a-lock-of-its-own", timeout=0):
            pass
    other.release()
