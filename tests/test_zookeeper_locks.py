"""ZooKeeper locks against real ZooKeeper servers: the herd counted, the queue fair,
readers sharing, re-entry, and a lost session that never commits."""

from __future__ import annotations

import contextlib
import logging
import threading
import time

import pytest
from kazoo.client import KazooClient

import locks
from helpers import wait_for
from locks import Backends, BackendUnavailable, LockError, LockLost
from lockshop.workshop.labs.zk_queues import sessions_watching, waiters_take_turns
from lockshop.cluster.holder import holder_process

SESSION_MS = 2000


@pytest.fixture
def open_zk(open_lock_factory):
    """Open a strategy's factory on the test's ZooKeeper: one session per factory."""
    return lambda name: open_lock_factory(name, lease_ms=SESSION_MS)


@pytest.fixture
def inspector(zookeeper):
    client = KazooClient(zookeeper.address)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def expire_session(factory, address: str) -> None:
    """End a factory's session on the server, as a long pause or partition would.

    A second client joins the same session and closes it: the server expires
    the session at once, and its ephemeral nodes with it.
    """
    other = KazooClient(address, client_id=factory.client.client_id)
    other.start(timeout=10)
    other.stop()
    other.close()


# --- nodes, readable in zkCli.sh ----------------------------------------------------

def test_the_simple_lock_is_one_ephemeral_node_holding_its_owner(open_zk, inspector):
    with open_zk("zk_simple").lock("product:7") as lock:
        data, stat = inspector.get("/lockshop/simple/product:7")
        assert data.decode() == lock.owner
        assert stat.ephemeralOwner == lock.session_id
        assert lock.fencing_token == stat.czxid  # the node's creation zxid
    wait_for(lambda: inspector.exists("/lockshop/simple/product:7") is None)


def test_the_fair_lock_queues_sequential_nodes_named_with_a_guid(open_zk, inspector):
    factory = open_zk("zk_fair")
    with factory.lock("product:7") as lock:
        children = inspector.get_children("/lockshop/fair/product:7")
        assert children == [lock.node.rpartition("/")[2]]
        assert children[0].startswith(f"lock-{lock.guid}-") and children[0][-10:].isdigit()
    # A release sends its delete without waiting: other sessions see it a moment later.
    wait_for(lambda: inspector.get_children("/lockshop/fair/product:7") == [])


@pytest.mark.parametrize("name", ["zk_simple", "zk_fair", "zk_rw"])
def test_fencing_tokens_grow_across_sessions(open_zk, name):
    tokens = []
    for _ in range(3):
        with open_zk(name).lock("t") as lock:
            tokens.append(lock.fencing_token)
    assert tokens == sorted(set(tokens))


# --- the herd effect, counted ------------------------------------------------------

# Lab C19 stages the same turns: a holder and 5 waiters, each on a session of its own;
# each release comes once every waiter left watches again (ZooKeeper's own list of
# watches says so). Wake-ups are counted by the locks' metrics.

def test_the_simple_lock_wakes_every_waiter_on_each_release(open_zk, zookeeper):
    # Releases wake the 5 waiters, then the 4 left, then 3...: 15 in all.
    assert waiters_take_turns(zookeeper, lambda: open_zk("zk_simple"), 5) == (15, 5)


def test_the_fair_lock_wakes_one_waiter_per_release(open_zk, zookeeper):
    assert waiters_take_turns(zookeeper, lambda: open_zk("zk_fair"), 5) == (5, 5)


# --- the fair lock's queue ------------------------------------------------------------

def test_the_fair_lock_serves_waiters_in_arrival_order(open_zk):
    holder_factory = open_zk("zk_fair")
    holder = holder_factory.lock("fifo")
    holder.acquire()
    order: list[int] = []
    threads = []
    for n in range(4):
        factory = open_zk("zk_fair")

        def waiter(n=n, factory=factory):
            with factory.lock("fifo", timeout=30):
                order.append(n)

        threads.append(threading.Thread(target=waiter))
        threads[-1].start()
        # queued before the next one arrives
        wait_for(lambda n=n: len(holder_factory.look("fifo").waiting) == n + 1)
    holder.release()
    for thread in threads:
        thread.join(30)
    assert order == [0, 1, 2, 3]


def test_a_waiter_that_gives_up_leaves_the_queue(open_zk, inspector, zookeeper):
    factory = open_zk("zk_fair")
    holder = factory.lock("quit")
    holder.acquire()
    impatient = open_zk("zk_fair").lock("quit", timeout=0.3)
    patient_factory = open_zk("zk_fair")
    patient_session = patient_factory.client.client_id[0]
    got = threading.Event()

    def patient():
        with patient_factory.lock("quit", timeout=30):
            got.set()

    gave_up = threading.Thread(target=impatient.acquire)
    gave_up.start()
    wait_for(lambda: factory.look("quit").waiting)  # the impatient one is queued
    thread = threading.Thread(target=patient)
    thread.start()
    wait_for(lambda: len(factory.look("quit").waiting) == 2)  # the patient one behind it
    gave_up.join(10)
    # The impatient one left; woken by that, the patient one looks again and watches
    # the holder: its node and the holder's are all that is left.
    wait_for(lambda: patient_session in sessions_watching(zookeeper)
             and len(inspector.get_children("/lockshop/fair/quit")) == 2)
    assert not got.is_set()  # its predecessor left, but the holder has not
    holder.release()
    thread.join(10)
    assert got.is_set()


@pytest.mark.parametrize("name, kind, seen_by_the_next", [
    ("zk_fair", "lock", "CHANGED"), ("zk_rw", "write", "CHANGED"), ("zk_rw", "read", "DELETED")])
def test_an_exclusive_holder_hands_the_lock_over_and_a_reader_just_leaves(
        open_zk, inspector, name, kind, seen_by_the_next):
    """What the waiter behind a holder is woken by: "data changed" from a holder
    that held the lock alone (the lock is the waiter's, no need to look),
    "deleted" from a reader, which may have shared the lock with others."""
    factory = open_zk(name)
    lock = factory.read_lock("hand") if kind == "read" else factory.lock("hand")
    lock.acquire()
    events = []
    woken = threading.Event()
    inspector.exists(lock.node, watch=lambda event: (events.append(event.type), woken.set()))
    lock.release()
    assert woken.wait(5)
    assert events == [seen_by_the_next]
    wait_for(lambda: inspector.get_children(lock.parent) == [])  # and the node is gone


def warnings_of_the_release(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == "locks.zookeeper"]


@pytest.mark.parametrize("contended", [False, True], ids=["uncontended", "contended"])
def test_a_holder_does_not_wait_for_its_release_to_be_answered(
        open_zk, inspector, zookeeper, caplog, contended):
    """The delete leaves at once, and release() returns without its answer: with
    the server stopped, no answer can come. It is checked once it comes (here: the
    node was already gone, deleted behind the holder's back)."""
    caplog.set_level(logging.WARNING, logger="locks.zookeeper")
    first = open_zk("zk_fair").lock("answer")
    lock = open_zk("zk_fair").lock("answer", timeout=10)
    first.acquire()
    if contended:
        def release_once_queued():  # the lock is queued behind first
            wait_for(lambda: len(inspector.get_children(first.parent)) == 2)
            first.release()
        threading.Thread(target=release_once_queued).start()
    else:
        first.release()
        # Its delete is sent, not waited for: gone from the server before the next
        # asks, or that one would queue behind it.
        wait_for(lambda: not inspector.get_children(first.parent))
    assert lock.acquire()
    inspector.delete(lock.node)
    zookeeper.pause()
    try:
        lock.release()
        # A release that waited would have given up on the answer by now, and said
        # so ("may be left behind"): nothing is said until the answer comes.
        assert warnings_of_the_release(caplog) == []
    finally:
        zookeeper.resume()
    said = wait_for(lambda: warnings_of_the_release(caplog))
    assert len(said) == 1 and "already gone at release" in said[0]


def test_a_writer_behind_two_readers_waits_for_both_whichever_leaves_first(open_zk):
    # The writer watches the reader just before it; that reader leaving must
    # not let the writer in while the first reader still holds the lock.
    first = open_zk("zk_rw").read_lock("both")
    second = open_zk("zk_rw").read_lock("both")
    assert first.acquire(timeout=1) and second.acquire(timeout=1)
    writer_factory = open_zk("zk_rw")
    entered = threading.Event()

    def writer():
        with writer_factory.lock("both", timeout=30):
            entered.set()

    thread = threading.Thread(target=writer)
    thread.start()
    wait_for(lambda: writer_factory.look("both").waiting)  # queued behind both readers
    second.release()
    assert not entered.wait(0.5)
    first.release()
    assert entered.wait(10)
    thread.join(10)


# --- re-entry ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["zk_fair", "zk_rw"])
def test_a_thread_reenters_with_another_lock_object_and_others_wait(open_zk, inspector, name):
    factory = open_zk(name)
    outer = factory.lock("again")
    outer.acquire()
    inner = factory.lock("again", timeout=0.2)
    assert inner.acquire()  # same thread: re-entry, no new node
    assert inner.fencing_token == outer.fencing_token
    parent = outer.parent
    assert len(inspector.get_children(parent)) == 1
    other = []
    thread = threading.Thread(target=lambda: other.append(factory.lock("again",
                                                                        timeout=0.2).acquire()))
    thread.start()
    thread.join()
    assert other == [False]  # another thread of the same session is another owner
    inner.release()
    assert len(inspector.get_children(parent)) == 1  # still held once
    outer.release()
    wait_for(lambda: inspector.get_children(parent) == [])


# --- the read/write lock -------------------------------------------------------------

def test_readers_share_and_a_writer_excludes_them(open_zk):
    factory = open_zk("zk_rw")
    first, second = factory.read_lock("rw"), open_zk("zk_rw").read_lock("rw")
    assert first.acquire(timeout=1)
    assert second.acquire(timeout=1)  # two readers at once
    writer = open_zk("zk_rw").lock("rw", timeout=0.3)
    assert writer.acquire() is False  # not while readers hold it
    first.release()
    second.release()
    assert writer.acquire()
    late_reader = open_zk("zk_rw").read_lock("rw", timeout=0.3)
    assert late_reader.acquire() is False  # not while a writer holds it
    writer.release()


def test_a_waiting_writer_is_not_starved_by_readers_that_come_after_it(open_zk):
    reader = open_zk("zk_rw").read_lock("queue")
    reader.acquire()
    writer_factory = open_zk("zk_rw")
    order = []

    def writer():
        with writer_factory.lock("queue", timeout=30):
            order.append("writer")

    thread = threading.Thread(target=writer)
    thread.start()
    wait_for(lambda: writer_factory.look("queue").waiting)  # the writer queued behind the reader
    late = open_zk("zk_rw").read_lock("queue", timeout=0.3)
    assert late.acquire() is False  # a reader after a waiting writer waits behind it
    reader.release()
    thread.join(10)
    assert order == ["writer"]


def test_only_the_read_write_strategy_lets_readers_share():
    # Every other strategy's read lock is its exclusive lock.
    factory = locks.open_factory("local", Backends())
    reader = factory.read_lock("r")
    reader.acquire()
    other = factory.read_lock("r", timeout=0.05)
    result = []
    thread = threading.Thread(target=lambda: result.append(other.acquire()))
    thread.start()
    thread.join()
    assert result == [False]
    reader.release()


# --- session loss ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["zk_simple", "zk_fair", "zk_rw"])
def test_a_holder_whose_session_expires_learns_it_before_commit(open_zk, zookeeper, name):
    factory = open_zk(name)
    lock = factory.lock("expiring")
    lock.acquire()
    lock.ensure_held()
    expire_session(factory, zookeeper.address)
    # The next holder gets in at once: the expired session's node is gone.
    successor = open_zk(name).lock("expiring", timeout=5)
    assert successor.acquire()
    with pytest.raises(LockLost):
        lock.ensure_held()
    # Its release must not delete the successor's node, even where the path is
    # the same (the simple lock) and even while kazoo opens a new session.
    with contextlib.suppress(LockError):
        lock.release()
    # One round trip on the old holder's connection: ZooKeeper applies a client's
    # requests in order, so a delete that release sent has landed by its answer.
    wait_for(factory.available)
    factory.client.sync("/")
    successor.ensure_held()


def test_a_holder_cut_off_from_zookeeper_may_not_commit(open_zk, zookeeper):
    lock = open_zk("zk_fair").lock("cut-off")
    lock.acquire()
    zookeeper.pause()  # SIGSTOP: the connection hangs, then drops (SUSPENDED)
    try:
        with pytest.raises((LockLost, BackendUnavailable)):
            lock.ensure_held()
    finally:
        zookeeper.resume()


def test_a_killed_holders_lock_passes_to_the_next_waiter_after_the_session_timeout(
        open_zk, zookeeper):
    with holder_process("zk_fair", "crash", zk_hosts=zookeeper.address,
                        lease_ms=1500) as said:
        assert said == "held"
        waiter = open_zk("zk_fair").lock("crash", timeout=0.5)
        assert waiter.acquire() is False
    # Leaving the block killed it (SIGKILL): no release, the session simply stops.
    started = time.monotonic()
    assert waiter.acquire(timeout=10)
    assert time.monotonic() - started < 5  # the 1.5 s session, not the 10 s timeout


def test_zookeeper_down_gives_backend_unavailable_and_the_factory_recovers(open_zk, zookeeper):
    factory = open_zk("zk_fair")
    zookeeper.stop()
    wait_for(lambda: not factory.available())
    with pytest.raises(BackendUnavailable):
        factory.lock("down").acquire()
    zookeeper.start()  # same port, same data
    wait_for(factory.available, timeout=30)
    with factory.lock("down", timeout=5) as lock:
        lock.ensure_held()
