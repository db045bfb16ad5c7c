"""Redis locks against real redis-server processes: the broken ones break, each in its
own way and every time; the correct one holds, is fenced, and fails safe when Redis dies."""

from __future__ import annotations

import hashlib
import os
import signal
import threading
import time

import pytest
import redis
import requests
from sqlalchemy import event

import locks
from helpers import Steady, flash_sale, hold_and_stop, order, pause_the_holder, wait_for
from locks import LockLost
from locks.redis_fair import FairRedisLock
from locks.redis_lock import RedisLock
from locks.redlock import Redlock
from lockshop.cluster.client import ShopClient
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
    insert_order,
    place_order,
    read_stock,
    write_stock,
)
from shop.store.audit import take_audit
from shop.store.db import engine_of
from shop.store.models import ProductKind
from shop.store.products import ProductSpec, reset_products

LEASE_MS = 200


@pytest.fixture
def factory(open_lock_factory):
    """A strategy's factory on the test's Redis server, with short leases."""
    return lambda name, lease_ms=LEASE_MS, **backends: open_lock_factory(
        name, lease_ms=lease_ms, **backends)


def gone(client: redis.Redis, key: str):
    """A condition to wait for: ``key`` has expired (or was deleted)."""
    return lambda: not client.exists(key)


def test_keys_are_readable_in_redis_cli(redis_server, factory):
    client = redis.Redis.from_url(redis_server.url)
    with factory("redis").lock("product:7") as lock:
        assert client.get("lockshop:lock:product:7").decode() == lock.token
        assert 0 < client.pttl("lockshop:lock:product:7") <= LEASE_MS
        epoch = int(client.get("lockshop:fence-epoch"))
        counter = int(client.get("lockshop:fence:product:7"))
        assert lock.fencing_token == epoch * 1_000_000 + counter
    assert client.get("lockshop:lock:product:7") is None


def test_a_look_as_the_lease_runs_out_sees_no_holder(factory):
    """The console and the tests look at a lock while its lease may run out: a key that
    is gone between TYPE and GET has no holder (it was a crash on a None token)."""
    locks_ = factory("redis")
    locks_.lock("product:7").acquire()
    answer_type = locks_.client.type

    def type_then_expire(key):
        kind = answer_type(key)
        locks_.client.delete(key)  # the lease runs out just after TYPE has answered
        return kind
    locks_.client.type = type_then_expire
    assert locks_.look("product:7").holders == []


def test_fencing_tokens_grow(factory):
    tokens = []
    for _ in range(3):
        with factory("redis").lock("t") as lock:
            tokens.append(lock.fencing_token)
    assert tokens == sorted(set(tokens))


def two_holders_after_a_slow_release(redis_server, factory, name: str):
    """A's lease expires; B takes the lock; A releases; can C get in while B holds?"""
    made = factory(name)
    a, b, c = (made.lock("slow") for _ in range(3))
    assert a.acquire(blocking=False)
    wait_for(gone(redis.Redis.from_url(redis_server.url), "lockshop:lock:slow"),
             message="A's lease to run out")  # A is slow
    assert b.acquire(blocking=False)
    return a, b, c


def test_plain_del_lets_a_slow_holder_delete_the_next_holders_lock(redis_server, factory):
    a, b, c = two_holders_after_a_slow_release(redis_server, factory, "redis_plain_del")
    a.release()  # DEL without looking: it deletes B's key
    assert c.acquire(blocking=False)
    assert b.held and c.held  # two holders at once


def test_the_correct_lock_refuses_the_slow_holders_release(redis_server, factory):
    a, b, c = two_holders_after_a_slow_release(redis_server, factory, "redis")
    with pytest.raises(LockLost):
        a.release()  # compare-and-delete: not ours any more
    assert not c.acquire(blocking=False)
    b.ensure_held()


def test_get_then_del_deletes_a_lock_taken_in_its_window(redis_server, factory):
    made = factory("redis_get_del", faults=("pause_before_del",))
    a, b, c = (made.lock("window") for _ in range(3))
    assert a.acquire(blocking=False)
    releasing = threading.Thread(target=a.release)  # GET matches, then pauses past the lease
    releasing.start()
    wait_for(gone(redis.Redis.from_url(redis_server.url), "lockshop:lock:window"),
             message="A's lease to run out while its release is paused")
    assert b.acquire(blocking=False)  # the key expired inside A's window
    releasing.join()  # ...and A's DEL removes B's key
    assert c.acquire(blocking=False)
    assert b.held and c.held


def test_two_holders_at_once_oversell(sessions, redis_server, factory):
    """The oversell that follows: B and C both hold the lock and both read stock 1."""
    reset_products(sessions, (ProductSpec("x", "x", ProductKind.ITEM, stock=1),))
    a, b, c = two_holders_after_a_slow_release(redis_server, factory, "redis_plain_del")
    a.release()  # deletes B's key
    assert c.acquire(blocking=False)
    context = OrderContext("test", "redis_plain_del", 0, 1000)
    seen = {}
    for holder in (b, c):  # both read before either writes
        with engine_of(sessions).begin() as db:
            seen[holder] = read_stock(db, 1, ProductKind.ITEM)[0]
    for holder in (b, c):
        holder.ensure_held()  # naive: each believes it holds the lock
        with engine_of(sessions).begin() as db:
            write_stock(db, 1, seen[holder] - 1)
            insert_order(db, OrderRequest(1), None, context)
    product = take_audit(sessions).products[0]
    assert list(seen.values()) == [1, 1]
    assert (product.sold, product.oversold) == (2, 1)


def test_a_holder_paused_after_its_last_check_loses_no_update(sessions, redis_server,
                                                              factory):
    """Fencing refuses a write older than the last one written; it cannot refuse a read.
    A has written, checked its lock (held), and is paused before its commit; its lease
    ends; B takes the lock, reads the stock A's commit is about to change, and sells.
    Unless B's read carries B's token to the product, and so waits for A's commit,
    B's write (the newer token: accepted) overwrites A's sale."""
    reset_products(sessions, (ProductSpec("x", "x", ProductKind.ITEM, stock=5),))
    engine, locks_ = engine_of(sessions), factory("redis", lease_ms=1000)
    client = redis.Redis.from_url(redis_server.url)
    context = OrderContext("test", "redis", 0, 5000)
    a = locks_.lock("product:1")
    assert a.acquire()
    with engine.begin() as db:
        a_read = read_stock(db, 1, ProductKind.ITEM)[0]
    b_answer = {}

    def b_orders() -> None:
        b_answer["order"] = place_order(engine, locks_, OrderRequest(1), context)

    b = threading.Thread(target=b_orders)
    b_writes = threading.Event()  # B's first write: its fencing token, before its read

    @event.listens_for(engine, "before_cursor_execute")
    def b_sends(conn, cursor, statement, *args) -> None:
        if threading.current_thread() is b and statement.lstrip().upper().startswith("UPDATE"):
            b_writes.set()

    with engine.begin() as db:  # A's write, committed when this block ends
        write_stock(db, 1, a_read - 1, fencing_token=a.fencing_token)
        insert_order(db, OrderRequest(1), None, context)
        a.ensure_held()  # A's last check: still held
        # A is paused: its 1 s lease ends.
        wait_for(gone(client, "lockshop:lock:product:1"), message="A's lease to run out")
        b.start()
        # B takes the lock and sends its fenced read, which A's open write holds up.
        wait_for(b_writes.is_set, message="B to send its fencing token to the product")
    b.join(10)
    event.remove(engine, "before_cursor_execute", b_sends)
    product = take_audit(sessions).products[0]
    assert "order" in b_answer
    assert (product.sold, product.remaining, product.lost_updates) == (2, 3, 0), product


# --- several instances ------------------------------------------------------------------

def answered(cluster, instance: int) -> tuple[requests.Response] | None:
    """An order's answer, in a tuple (a 503 is a false Response); None while the
    instance takes no connection."""
    try:
        return (order(cluster, instance),)
    except requests.ConnectionError:
        return None



@pytest.mark.cluster
def test_setnx_without_expiry_blocks_everyone_after_a_kill(start_cluster, redis_server):
    cluster = start_cluster(2, redis_url=redis_server.url, lock_timeout_ms=300)
    admin = ShopClient(cluster.urls[1])
    admin.reset([{"sku": "x", "stock": 5}])
    admin.set_settings(strategy="redis_setnx", business_delay_ms=5000)
    holder = hold_and_stop(cluster, 0)
    os.killpg(cluster.instances[0].process.pid, signal.SIGKILL)
    holder.join()
    admin.set_settings(business_delay_ms=0)
    client = redis.Redis.from_url(redis_server.url)
    assert client.ttl("lockshop:lock:product:1") == -1  # no expiry: stuck for good
    for _ in range(3):
        stuck = order(cluster, 1)
        assert stuck.status_code == 503 and stuck.json()["error"] == "lock_timeout"
    client.delete("lockshop:lock:product:1")  # what an admin does with redis-cli
    assert order(cluster, 1).status_code == 201
    assert admin.audit()["correct"]


@pytest.mark.cluster
def test_a_crash_between_setnx_and_expire_leaves_a_lock_that_never_expires(start_cluster,
                                                                            redis_server):
    cluster = start_cluster(1, redis_url=redis_server.url, lock_timeout_ms=300,
                            faults=("crash_after_setnx",))
    admin = ShopClient(cluster.urls[0])
    admin.reset([{"sku": "x", "stock": 5}])
    admin.set_settings(strategy="redis_setnx_expire")
    with pytest.raises(requests.ConnectionError):
        order(cluster, 0)  # the worker dies between SETNX and EXPIRE
    client = redis.Redis.from_url(redis_server.url)
    assert client.ttl("lockshop:lock:product:1") == -1
    stuck, = wait_for(lambda: answered(cluster, 0), timeout=20,
                      message="gunicorn to start a new worker")
    assert stuck.status_code == 503 and stuck.json()["error"] == "lock_timeout"
    assert admin.audit()["totals"]["sold"] == 0


@pytest.mark.cluster
def test_the_correct_redis_lock_is_correct_across_instances(start_cluster, redis_server):
    cluster = start_cluster(3, redis_url=redis_server.url)
    audit, served_by = flash_sale(cluster, "redis", instances=3)
    assert len(served_by) == 3
    assert audit["correct"] and audit["totals"]["sold"] == 10


@pytest.mark.cluster
def test_a_paused_holder_is_fenced(start_cluster, redis_server):
    cluster = start_cluster(2, redis_url=redis_server.url, lock_lease_ms=500)
    admin = ShopClient(cluster.urls[1])
    # Paused past its 500 ms lease: the second buyer takes the lock over and
    # writes with a newer token.
    paused, second = pause_the_holder(cluster, admin, "redis", paused_for=0.7)
    assert second.status_code == 201, second.text
    assert paused.status_code == 503
    assert paused.json()["error"] == "stale_write"
    audit = admin.audit()
    assert audit["correct"]
    assert (audit["totals"]["sold"], audit["totals"]["stale_writes_rejected"]) == (1, 1)


@pytest.mark.cluster
def test_redis_killed_mid_sale_gives_503s_no_oversell_and_recovers(start_cluster, redis_server):
    cluster = start_cluster(2, redis_url=redis_server.url)
    admin = ShopClient(cluster.urls[0])
    admin.reset([{"sku": "x", "stock": 40}])
    admin.set_settings(strategy="redis", business_delay_ms=20)
    with Steady(cluster.urls, 6) as sale:
        wait_for(lambda: sale.selling(), message="the sale to be under way")
        epoch = int(redis.Redis.from_url(redis_server.url).get("lockshop:fence-epoch"))
        redis_server.kill()
        wait_for(lambda: "backend_unavailable" in sale.errors(),
                 message="a buyer to hear Redis is gone")
    assert set(sale.statuses()) <= {201, 409, 503}
    assert admin.audit()["correct"]  # nothing taken without the lock
    wait_for(a_later_second(epoch), message=f"the clock to leave second {epoch}")
    redis_server.start()  # same port, empty: the shop reconnects by itself
    recovered = order(cluster, 0)
    assert recovered.status_code in (201, 409), recovered.text
    assert admin.audit()["correct"]


def a_later_second(epoch: int):
    """A condition to wait for: the clock has left second ``epoch``. The epoch of the
    fencing tokens is the Redis server's clock at its first token, so a server started
    again within the same second would begin no larger epoch: time is the point here."""
    return lambda: time.time() >= epoch + 1


def test_tokens_keep_growing_across_a_redis_restart(redis_server, factory):
    before = factory("redis")
    with before.lock("epoch") as lock:
        old = lock.fencing_token
    before.close()
    redis_server.kill()
    wait_for(a_later_second(old // 1_000_000))
    redis_server.start()  # empty: the counter is gone
    with factory("redis").lock("epoch") as lock:
        assert lock.fencing_token > old


# --- the correct family: reentrant, watchdog, fair, Redlock ---------------------------------

def test_reentrant_counts_in_redis_and_excludes_other_threads(redis_server, factory):
    made = factory("redis_reentrant")
    lock = made.lock("re")
    client = redis.Redis.from_url(redis_server.url)
    lock.acquire()
    lock.acquire()
    assert list(map(int, client.hgetall("lockshop:lock:re").values())) == [2]
    outsider = threading.Thread(target=lambda: results.append(
        made.lock("re").acquire(blocking=False)))
    results: list[bool] = []
    outsider.start()
    outsider.join()
    assert results == [False]
    lock.release()
    assert list(map(int, client.hgetall("lockshop:lock:re").values())) == [1]
    lock.release()
    assert client.exists("lockshop:lock:re") == 0


def test_watchdog_holds_through_a_section_longer_than_the_lease_and_stops_after(redis_server,
                                                                              factory):
    made = factory("redis_watchdog")
    client = redis.Redis.from_url(redis_server.url)
    def renewals() -> int:
        return locks.metrics.snapshot().get("redis_watchdog", {}).get("renewals", 0)

    before = renewals()

    def renewals_since() -> int:
        return renewals() - before

    lock = made.lock("long")
    lock.acquire()
    # A section three leases long: the watchdog renews every third of a lease, so nine
    # renewals seen are three leases gone by with the lock still ours.
    wait_for(lambda: renewals_since() >= 9, timeout=LEASE_MS * 10 / 1000,
             message="nine renewals (three leases) while the section runs")
    lock.ensure_held()
    assert client.get("lockshop:lock:long").decode() == lock.token
    lock.release()
    renewed = renewals_since()
    assert renewed >= 9  # every third of a lease
    time.sleep(LEASE_MS / 1000)  # a lease's time, in which a live watchdog would renew
    assert renewals_since() == renewed
    assert client.exists("lockshop:lock:long") == 0


def test_watchdog_holder_learns_of_a_lost_lock_before_commit(sessions, redis_server, factory):
    reset_products(sessions, (ProductSpec("x", "x", ProductKind.ITEM, stock=5),))
    made = factory("redis_watchdog")
    client = redis.Redis.from_url(redis_server.url)

    def steal() -> None:  # once the order holds the lock, in its business delay
        wait_for(lambda: client.exists("lockshop:lock:product:1"))
        client.set("lockshop:lock:product:1", "thief")

    stolen = threading.Thread(target=steal)
    stolen.start()
    with pytest.raises(LockLost):
        place_order(engine_of(sessions), made, OrderRequest(1),
                    OrderContext("test", "redis_watchdog", 400, 1000))
    stolen.join()
    assert take_audit(sessions).products[0].sold == 0  # nothing was written


def test_fair_lock_serves_waiters_in_arrival_order_with_one_wakeup_each(factory, monkeypatch):
    # Waiters wake by a hand-off alone: one whose fallback poll ran out as its hand-off
    # arrived collects it on its next try, not counted as a wake-up (seen under load:
    # 5 of 6), which says nothing about a herd.
    monkeypatch.setattr(FairRedisLock, "fallback_poll", 30.0)
    made = factory("redis_fair", lease_ms=5000)  # outlives the holder's wait
    holder = made.lock("fair")
    holder.acquire()
    order: list[int] = []
    before = locks.metrics.snapshot().get("redis_fair", {}).get("wakeups", 0)

    def waiter(n: int):
        with made.lock("fair", timeout=10):
            order.append(n)

    threads = []
    for n in range(6):
        threads.append(threading.Thread(target=waiter, args=(n,)))
        threads[-1].start()
        # arrive one after another: each queued before the next starts
        wait_for(lambda n=n: len(made.look("fair").waiting) == n + 1)
    holder.release()
    for t in threads:
        t.join()
    assert order == list(range(6))  # first come, first served
    wakeups = locks.metrics.snapshot()["redis_fair"]["wakeups"] - before
    assert wakeups == 6  # one per release, not a herd


def test_fair_lock_queued_waiter_takes_over_from_a_crashed_holder(factory):
    made = factory("redis_fair", lease_ms=300)
    crashed = made.lock("crash")
    crashed.acquire()  # and never releases: its process "died"
    waiter = made.lock("crash", timeout=5)
    started = time.monotonic()
    assert waiter.acquire()  # queued, no hand-over comes; the fallback poll finds it free
    assert time.monotonic() - started >= 0.25  # only once the lease had run out
    waiter.release()


def test_fair_lock_skips_a_waiter_that_gave_up(redis_server, factory):
    # No lease runs out here: the waiter gives up after its own 0.1 s, whatever the load.
    made = factory("redis_fair", lease_ms=60_000)
    holder = made.lock("quit")
    holder.acquire()
    assert not made.lock("quit", timeout=0.1).acquire()  # queued, then gave up
    client = redis.Redis.from_url(redis_server.url)
    assert client.llen("lockshop:queue:quit") == 0
    holder.release()
    assert made.lock("quit").acquire(blocking=False)



def test_fair_lock_waiter_that_gives_up_holding_a_wake_up_passes_it_on(redis_server, factory):
    """The lost wake-up: a release frees the lock and tells the head "try now"; the head
    gives up before it tries. Unless its leaving tells the waiter behind, the lock sits
    free while that waiter sleeps out its fallback (200 ms), or its whole timeout."""
    made = factory("redis_fair", lease_ms=60_000)
    holder = made.lock("told")
    # The releaser's threshold decides: out of reach, the release frees the lock and
    # tells the head "try now". (At the default 20 ms, a head queued 20 ms before the
    # release, as on a busy machine, would be handed the lock instead: CI, once.)
    holder.starving_after_ms = 3_600_000
    assert holder.acquire(blocking=False)
    quitter, behind = made.lock("told"), made.lock("told")
    assert not quitter._try_acquire() and not behind._try_acquire()  # both queued
    holder.release()  # frees the lock, and tells the head (the quitter) "try now"
    client = redis.Redis.from_url(redis_server.url)
    assert client.get("lockshop:lock:told") is None
    quitter._gave_up()  # ... which gives up before it tries
    assert client.lrange(f"lockshop:wake:{behind.token}", 0, -1) == [b"0"]  # told instead
    assert behind.acquire(timeout=1)
    behind.release()

def redlock_factory(start_redis, factory, servers: int = 5):
    running = [start_redis() for _ in range(servers)]
    made = factory("redlock", redis_urls=tuple(s.url for s in running), lease_ms=2000)
    return made, running


def test_redlock_works_with_two_of_five_servers_down(start_redis, factory):
    made, servers = redlock_factory(start_redis, factory)
    servers[0].kill()
    servers[3].kill()
    lock = made.lock("majority")
    assert lock.acquire(blocking=False)
    assert not made.lock("majority").acquire(blocking=False)  # still exclusive
    lock.ensure_held()
    lock.release()


def test_redlock_refuses_with_three_of_five_servers_down(start_redis, factory):
    made, servers = redlock_factory(start_redis, factory)
    for server in servers[:3]:
        server.kill()
    with pytest.raises(locks.BackendUnavailable, match="2 of 5 servers reachable, 3 needed"):
        made.lock("minority").acquire()
    for server in servers[3:]:  # nothing left behind on the two that answered
        assert redis.Redis.from_url(server.url).exists("lockshop:lock:minority") == 0


def test_redlock_releases_on_a_server_restarted_since_its_last_pair(start_redis, factory):
    """A restart empties the server's script cache and closes the connection Redlock kept
    idle to it: the next pair reconnects, the release's EVALSHA is answered NOSCRIPT,
    the script is loaded there and run, and the key is gone from all five servers."""
    made, servers = redlock_factory(start_redis, factory)
    lock = made.lock("restarted")
    assert lock.acquire(blocking=False)
    lock.release()
    servers[2].restart()
    again = made.lock("restarted")
    assert again.acquire(blocking=False)
    assert all(redis.Redis.from_url(s.url).exists("lockshop:lock:restarted") for s in servers)
    again.release()
    assert not any(redis.Redis.from_url(s.url).exists("lockshop:lock:restarted")
                   for s in servers)
    script = hashlib.sha1(RedisLock.COMPARE_AND_DELETE.encode()).hexdigest()
    assert redis.Redis.from_url(servers[2].url).script_exists(script) == [True]


def test_redlock_validity_runs_on_the_injected_clock(start_redis, factory):
    """Validity is lease - time spent acquiring - drift, measured on the lock's own
    clock: a pause past it (here, the clock moved on) and the lock is no longer held,
    though every server still has the key."""
    made, _ = redlock_factory(start_redis, factory)
    now = [1000.0]
    lock = Redlock("validity", clock=lambda: now[0], **made.lock_arguments())
    assert lock.acquire(blocking=False)
    now[0] += 1.97  # of a 2 s lease: validity is 2 s less drift (22 ms) less the acquiring
    lock.ensure_held()
    now[0] += 0.01
    with pytest.raises(LockLost):
        lock.ensure_held()


@pytest.mark.cluster
@pytest.mark.parametrize("name", ["redis_reentrant", "redis_watchdog", "redis_fair",
                                  "redis_two_mode", "redlock"])
def test_each_correct_redis_lock_is_correct_across_instances(start_cluster, start_redis, name):
    urls = tuple(start_redis().url for _ in range(5)) if name == "redlock" else ()
    cluster = start_cluster(3, redis_url=start_redis().url, redis_urls=urls)
    audit, served_by = flash_sale(cluster, name, instances=3)
    assert len(served_by) == 3
    assert audit["correct"] and audit["totals"]["sold"] == 10, audit


def test_a_key_left_by_another_kind_of_redis_lock_is_a_503_not_a_500(redis_server, factory,
                                                                       start_cluster):
    """Switching from 'redis' (a string per lock) to 'redis_reentrant' (a hash) while a
    hold of the first is still within its lease: the reentrant lock finds a string at
    its key. Neither ours nor free: a clear 503, nothing sold, and the lock works again
    once that lease ends."""
    client = redis.Redis.from_url(redis_server.url)
    client.set("lockshop:lock:product:1", "another strategy's token", px=1500)
    with pytest.raises(locks.BackendUnavailable, match="another kind of lock"):
        factory("redis_reentrant").lock("product:1").acquire()

    cluster = start_cluster(1, redis_url=redis_server.url)
    shop = ShopClient(cluster.urls[0])
    shop.reset([{"sku": "x", "stock": 5}])
    shop.set_settings(strategy="redis_reentrant", business_delay_ms=0)
    client.set("lockshop:lock:product:1", "another strategy's token", px=1500)
    answer = requests.post(f"{cluster.urls[0]}/api/orders", json={"product_id": 1}, timeout=30)
    assert answer.status_code == 503 and answer.json()["error"] == "backend_unavailable"
    assert shop.audit()["totals"]["sold"] == 0
    wait_for(gone(client, "lockshop:lock:product:1"), message="the other lock's lease to end")
    assert shop.order() == 201
