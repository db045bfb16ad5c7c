"""Every lock's own record of its holds, what its backend shows of it, and the overlaps
the console draws in red: on real servers."""

from __future__ import annotations

import threading
import time

import pytest

import locks
from helpers import wait_for
from locks import HoldLog, LockLost
from lockshop.cluster.hold_logs import overlaps


def test_a_hold_is_recorded_from_acquire_to_the_start_of_its_release():
    log = HoldLog()
    lock = locks.open_factory("local").lock("product:1")
    lock._hold_log = log  # a log of its own, not the process-wide one
    before = time.time()
    lock.acquire()
    (held,) = log.since()
    assert held.released is None and held.lock == "product:1" and held.acquired >= before
    lock.release()
    (done,) = log.since()
    assert done.ended == "released" and held.acquired <= done.released <= time.time()


def test_the_log_keeps_the_last_finished_holds_and_every_open_one():
    log = HoldLog(capacity=3)
    open_one = log.opened("a", "s", "o", None)
    for _ in range(5):
        log.closed(log.opened("b", "s", "o", None))
    holds = log.since()
    assert len(holds) == 4 and [h.id for h in holds if h.released is None] == [open_one]
    assert log.close_open("gone") == 1 and all(h.ended for h in log.since())


def test_overlaps_are_two_holds_of_one_lock_at_once():
    def hold(id_, lock, start, end):
        return {"id": id_, "lock": lock, "acquired": start, "released": end}
    sources = [{"name": "shop-1", "holds": [hold(1, "p:1", 0.0, 1.0), hold(2, "p:2", 0.0, 5.0)]},
               {"name": "shop-2", "holds": [hold(1, "p:1", 1.0, 2.0), hold(2, "p:1", 1.5, None)]}]
    found = overlaps(sources, now=3.0)
    # Back to back is no overlap; another lock is no overlap; an open hold lasts until now.
    assert [(o["lock"], o["from"], o["to"], [h["id"] for h in o["holds"]]) for o in found] == [
        ("p:1", 1.5, 2.0, [1, 2])]


def test_a_lock_lost_to_its_lease_is_recorded_as_lost(open_lock_factory):
    factory = open_lock_factory("redis", lease_ms=100)
    log = HoldLog()
    a, b = factory.lock("product:1"), factory.lock("product:1")
    a._hold_log = b._hold_log = log
    # Only A's lease is meant to run out: B's outlives any pause of a busy machine
    # between its acquire and its release.
    b.lease_ms = 60_000
    a.acquire()
    wait_for(lambda: not factory.look("product:1").holders, message="A's lease to run out")
    assert b.acquire(blocking=False)
    with pytest.raises(LockLost):
        a.release()
    b.release()
    first, second = log.since()
    assert first.ended == "lost" and second.ended == "released"
    # By their own records, A and B held the lock at once: the overlap the console draws.
    assert second.acquired < first.released


def one_holder_one_waiter(factory):
    """A holder of product:1 and, in a thread, a waiter for it: the holder, and the lock
    as the backend shows it once the waiter is queued. Both are gone on return."""
    holder = factory.lock("product:1")
    holder.acquire()
    waiter = threading.Thread(target=lambda: factory.lock("product:1", timeout=3).acquire())
    waiter.start()
    view = wait_for(lambda: (seen := factory.look("product:1")).waiting and seen,
                    message="the waiter to queue")
    holder.release()
    waiter.join()
    return holder, view


def test_a_redis_lock_shows_its_holder_and_its_queue(open_lock_factory):
    holder, view = one_holder_one_waiter(open_lock_factory("redis_fair", lease_ms=5000))
    assert [h["owner"] for h in view.holders] == [holder.owner]
    assert 0 < view.holders[0]["expires_in_ms"] <= 5000
    assert len(view.waiting) == 1


def test_a_zookeeper_queue_shows_its_head_as_holder_and_the_rest_waiting(open_lock_factory):
    holder, view = one_holder_one_waiter(open_lock_factory("zk_fair"))
    assert [h["owner"] for h in view.holders] == [holder.owner]
    assert len(view.waiting) == 1 and view.waiting[0]["since"] >= view.holders[0]["since"]


def test_the_lock_table_shows_its_row(open_lock_factory):
    factory = open_lock_factory("table", lease_ms=3000)
    lock = factory.lock("product:1")
    assert factory.look("product:1").holders == []
    lock.acquire()
    (holder,) = factory.look("product:1").holders
    assert holder["owner"] == lock.owner and 0 < holder["expires_in_ms"] <= 3000
    lock.release()
