"""Labs of the ZooKeeper locks (A0, A1, A3, A4): ephemeral nodes that go with
their session, the herd and the queue that avoids it, readers that share.

Each lock is opened on its own factory, hence its own ZooKeeper session, as
separate shop instances would be.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import locks
from locks import Backends
from lockshop.cluster.faults import expire_session
from lockshop.workshop.labs.holders import holder_process
from lockshop.workshop.labs.record import Lab
from shop.errors import StaleWriteRejected
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
    insert_order,
    read_stock,
    write_stock,
)
from shop.orders.strategies import Strategies
from shop.store.audit import take_audit
from shop.store.models import ProductKind
from shop.store.products import ProductSpec

#: The shortest session ZooKeeper allows here (tickTime 500 ms): the lock's lease.
SESSION_MS = 1000


# --- C02: two ticket offices, one seat ------------------------------------------------------

def stage_ticket_offices(run) -> None:
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "none", "each office reads the free seats, takes the first, writes"),
            ("fix", "zk_fair", "each office sells inside the fair ZooKeeper lock of the show")):
        getattr(run, half)(strategy, how)
        seats = tuple(f"A{n}" for n in range(1, 7))
        sessions = run.shop_database(ProductSpec("show", "Show", ProductKind.TICKET,
                                                 seats=seats))
        strategies = Strategies(Backends(zk_hosts=zk.address), "sqlite")
        place = strategies.runner(strategy)
        context = OrderContext("lab", strategy, business_delay_ms=100, lock_timeout_ms=10_000)
        start = threading.Barrier(2)
        sold: list[str] = []

        def office() -> None:
            start.wait()
            sold.append(place(sessions, OrderRequest(1), context).seat)

        offices = [threading.Thread(target=office) for _ in range(2)]
        for thread in offices:
            thread.start()
        for thread in offices:
            thread.join()
        strategies.close()
        audit = take_audit(sessions).products[0]
        observed = (f"seats sold {sorted(sold)}; free seats left {audit.remaining}; "
                    f"double-booked {audit.double_booked_seats}")
        if half == "broken":
            run.check("two offices sell the show's next free seat at the same moment (6 free)",
                      expected="both read 6 free and sell A1: one seat sold twice, 5 left",
                      observed=observed,
                      agrees=sold == ["A1", "A1"] and audit.double_booked_seats == 1)
        else:
            run.check("two offices sell the show's next free seat at the same moment (6 free)",
                      expected="one after the other: A1, then A2; 4 left",
                      observed=observed,
                      agrees=sorted(sold) == ["A1", "A2"] and audit.double_booked_seats == 0)


# --- C18: a holder that dies, and the node that goes with its session -----------------------

def stage_ephemeral(run) -> None:
    redis_server, = run.parts.redis()
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "redis_setnx", "SETNX with no expiry: the key lives until someone "
                                      "deletes it"),
            ("fix", "zk_simple", "an ephemeral node: it lives as long as its holder's session")):
        getattr(run, half)(strategy, how)
        with holder_process(strategy, redis_url=redis_server.url, zk_hosts=zk.address,
                            lease_ms=SESSION_MS) as said:
            pass  # it holds the lock; leaving the block kills it
        run.check("a process takes the lock of product:1 and is killed (SIGKILL)",
                  expected="it held the lock, and dies without releasing it",
                  observed=f"it said {said!r}, and was killed", agrees=said == "held")
        factory = run.open_locks(strategy, redis_url=redis_server.url, zk_hosts=zk.address,
                                 lease_ms=SESSION_MS)
        waiter = factory.lock("product:1", timeout=4)
        started = time.monotonic()
        got = waiter.acquire()
        waited = time.monotonic() - started
        if half == "broken":
            run.check("another process asks for the lock, and waits up to 4 s",
                      expected="refused: the dead holder's key never goes",
                      observed=f"acquired: {got} after {waited:.1f} s", agrees=not got)
        else:
            run.check("another process asks for the lock, and waits up to 4 s",
                      expected=f"granted once the dead session times out ({SESSION_MS} ms "
                               "and a tick or two)",
                      observed=f"acquired: {got} after {waited:.1f} s",
                      agrees=got and waited < 4)
            waiter.release()


# --- C22: a session that expires under a paused holder, and the zxid that fences it ---------------

def stage_session_expiry(run) -> None:
    zk = run.parts.zookeeper()
    for half, how, fenced in (
            ("broken", "the write trusts the holder's last check", False),
            ("fix", "the write carries the holder's token: its node's creation zxid", True)):
        getattr(run, half)("zk_fair", how)
        sessions = run.shop_database(ProductSpec("x", "Lab item", ProductKind.ITEM, stock=5))
        context = OrderContext("lab", "zk_fair", 0, 1000)
        a_factory = run.open_locks("zk_fair", zk_hosts=zk.address, lease_ms=4000)
        b_factory = run.open_locks("zk_fair", zk_hosts=zk.address, lease_ms=4000)
        a = a_factory.lock("product:1")
        a.acquire()
        with sessions.begin() as session:
            a_read = read_stock(session, 1, ProductKind.ITEM)[0]
        a.ensure_held()
        expire_session(a_factory.client, zk.address)
        queue = b_factory.client.get_children("/lockshop/fair/product:1")
        run.check(f"A reads stock {a_read}, checks it holds the lock, and is paused past its "
                  "session timeout", expected="the server ends A's session, and its node with it",
                  observed=f"nodes in the queue: {len(queue)}", agrees=not queue)
        b = b_factory.lock("product:1", timeout=5)
        b.acquire()
        with sessions.begin() as session:
            b_read = read_stock(session, 1, ProductKind.ITEM)[0]
            write_stock(session, 1, b_read - 1, fencing_token=b.fencing_token)
            insert_order(session, OrderRequest(1), None, context)
        b.release()
        run.check("B takes the lock and sells one unit", expected="B writes stock 4",
                  observed=f"B read {b_read}, wrote {b_read - 1}", agrees=b_read == 5)
        try:
            with sessions.begin() as session:
                write_stock(session, 1, a_read - 1,
                            fencing_token=a.fencing_token if fenced else None)
                insert_order(session, OrderRequest(1), None, context)
            outcome = "written"
        except StaleWriteRejected:
            outcome = "refused as stale"
        product = take_audit(sessions).products[0]
        observed = (f"A's write {outcome}; sold {product.sold}, stock {product.remaining}, "
                    f"lost updates {product.lost_updates}")
        if not fenced:
            run.check("A resumes and writes stock 4", expected="written over B's sale: one "
                      "update lost", observed=observed, agrees=product.lost_updates == 1)
        else:
            run.check("A resumes and writes stock 4 with its zxid (older than B's)",
                      expected="refused as stale: nothing lost", observed=observed,
                      agrees=outcome == "refused as stale" and product.lost_updates == 0)


# --- C30: no single point of failure ------------------------------------------------------------

def stage_ensemble(run) -> None:
    run.broken("zk_fair on one ZooKeeper server", "the server is the lock service")
    zk = run.parts.zookeeper()
    factory = run.open_locks("zk_fair", zk_hosts=zk.address)
    zk.stop()
    outcome = _outcome(factory.lock("product:1", timeout=2))
    run.check("the one ZooKeeper server stops; a buyer asks for the lock",
              expected="no lock at all: backend unavailable (the shop answers 503)",
              observed=outcome, agrees=outcome.startswith("BackendUnavailable"))
    run.parts.zookeeper()  # back, for the labs after this one

    run.fix("zk_fair on an ensemble of three", "any majority of the servers serves the lock")
    ensemble = run.parts.ensemble(run.lab.name)
    factory = run.open_locks("zk_fair", zk_hosts=ensemble.hosts)
    before = _outcome(factory.lock("product:1", timeout=5), release=True)
    leader = ensemble.leader()
    leader.kill()
    killed = time.monotonic()
    refusals, after = 0, ""
    while time.monotonic() - killed < 20 and after != "acquired":
        after = _outcome(factory.lock("product:1", timeout=2), release=True)
        if after != "acquired":
            refusals += 1  # a 503 with Retry-After, to a buyer of the shop
            time.sleep(0.5)
    took = time.monotonic() - killed
    run.check(f"a buyer locks product:1; the ensemble's leader ({leader.name}) is killed; "
              "buyers keep asking, as a shop's clients retry a 503",
              expected="the two left elect a leader within seconds, and the lock goes on",
              observed=f"before: {before}; after: {after} {took:.1f} s after the kill "
                       f"({refusals} refusals meanwhile)",
              agrees=before == "acquired" and after == "acquired")


def _outcome(lock, release: bool = False) -> str:
    try:
        if not lock.acquire():
            return "refused"
    except Exception as error:  # noqa: BLE001 - what happened is the observation
        return f"{type(error).__name__}: {error}"
    if release:
        lock.release()
    return "acquired"


# --- C19: the herd, and the queue that avoids it ------------------------------------------------

WAITERS = 5


def stage_herd(run) -> None:
    zk = run.parts.zookeeper()
    for half, strategy, how, expected, agrees in (
            ("broken", "zk_simple", "every waiter watches the one lock node",
             "every release wakes every waiter still waiting: 5+4+3+2+1, about 15",
             lambda wakeups: wakeups >= 12),
            ("fix", "zk_fair", "sequential nodes, each waiter watching the one just before it",
             "each release wakes one waiter: 5", lambda wakeups: wakeups == WAITERS)):
        getattr(run, half)(strategy, how)
        wakeups = _waiters_take_turns(run, strategy, zk.address)
        run.check(f"a holder and {WAITERS} waiters, each with its own session; they take turns",
                  expected=expected, observed=f"{wakeups} wake-ups",
                  agrees=agrees(wakeups))


def _waiters_take_turns(run, strategy: str, zk_hosts: str) -> int:
    holder = run.open_locks(strategy, zk_hosts=zk_hosts).lock("herd")
    holder.acquire()
    factories = [run.open_locks(strategy, zk_hosts=zk_hosts) for _ in range(WAITERS)]
    before = _wakeups(strategy)
    queued = threading.Barrier(WAITERS + 1)

    def waiter(factory) -> None:
        lock = factory.lock("herd", timeout=30)
        queued.wait()
        with lock:
            time.sleep(0.05)  # long enough for the others to watch again

    threads = [threading.Thread(target=waiter, args=(f,)) for f in factories]
    for thread in threads:
        thread.start()
    queued.wait()
    time.sleep(0.3)  # every waiter has tried once and is watching
    holder.release()
    for thread in threads:
        thread.join(30)
    return _wakeups(strategy) - before


def _wakeups(strategy: str) -> int:
    return locks.metrics.snapshot().get(strategy, {}).get("wakeups", 0)


# --- C20: first come, first served ---------------------------------------------------------------

FIRST_WAITER = """
import sys, time, locks
from locks import Backends
factory = locks.open_factory(sys.argv[1], Backends(zk_hosts=sys.argv[2]))
deadline = time.monotonic() + 10
while not factory.available() and time.monotonic() < deadline:
    time.sleep(0.02)
lock = factory.lock("product:1", timeout=20)
print("waiting", flush=True)
assert lock.acquire()
print("held", flush=True)
time.sleep(0.2)
lock.release()
"""


def stage_arrival_order(run) -> None:
    """The first waiter is descheduled (SIGSTOP) just as the lock frees; a newcomer asks."""
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "zk_simple", "waiters race to create the one node when it goes"),
            ("fix", "zk_fair", "waiters queue as sequential nodes; the lock passes down the "
                               "queue")):
        getattr(run, half)(strategy, how)
        holder = run.open_locks(strategy, zk_hosts=zk.address).lock("product:1")
        holder.acquire()
        with subprocess.Popen([sys.executable, "-c", FIRST_WAITER, strategy, zk.address],
                              stdout=subprocess.PIPE, text=True) as first:
            first.stdout.readline()  # "waiting": it is about to ask
            time.sleep(0.5)  # it has asked, and waits (watching)
            first.send_signal(signal.SIGSTOP)
            holder.release()
            newcomer = run.open_locks(strategy, zk_hosts=zk.address).lock("product:1")
            jumped = newcomer.acquire(blocking=False)
            first.send_signal(signal.SIGCONT)
            if jumped:
                newcomer.release()
            said = first.stdout.readline().strip()
            first.wait(10)
        observed = f"the newcomer got in first: {jumped}; the first waiter then: {said!r}"
        if half == "broken":
            run.check("a waiter queues first; it is paused as the holder releases; a newcomer "
                      "asks", expected="the newcomer gets in ahead of the first waiter",
                      observed=observed, agrees=jumped and said == "held")
        else:
            run.check("a waiter queues first; it is paused as the holder releases; a newcomer "
                      "asks", expected="the lock is the first waiter's, paused or not: the "
                      "newcomer waits its turn", observed=observed,
                      agrees=not jumped and said == "held")


# --- C38: a woken waiter looks again -------------------------------------------------------------

def stage_look_again(run) -> None:
    """H holds; W1 queues and gives up after 0.5 s; W2 queued behind W1 is woken by that."""
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "zk_fair_trusting", "a waiter woken by any deletion ahead of it takes "
                                           "the lock"),
            ("fix", "zk_fair", "a waiter woken by a deletion looks at the queue again")):
        getattr(run, half)(strategy, how)
        holder = run.open_locks(strategy, zk_hosts=zk.address).lock("product:1")
        holder.acquire()
        inspector = run.open_locks("zk_fair", zk_hosts=zk.address)
        queue = lambda: inspector.client.get_children("/lockshop/fair/product:1")  # noqa: E731
        w1 = run.open_locks(strategy, zk_hosts=zk.address).lock("product:1", timeout=0.5)
        w2 = run.open_locks(strategy, zk_hosts=zk.address).lock("product:1", timeout=10)
        w2_holds = threading.Event()
        gave_up = threading.Thread(target=w1.acquire)
        gave_up.start()
        _wait_until(lambda: len(queue()) == 2)

        def second() -> None:
            if w2.acquire():
                w2_holds.set()
        threading.Thread(target=second, daemon=True).start()
        _wait_until(lambda: len(queue()) == 3)
        gave_up.join()
        left = len(queue())
        run.check("W1 queues behind the holder, W2 behind W1; W1 gives up after 0.5 s",
                  expected="W1 deletes its own node: it would block the queue otherwise",
                  observed=f"nodes left in the queue: {left} (the holder's and W2's)",
                  agrees=left == 2)
        entered = w2_holds.wait(1.0)
        if half == "broken":
            run.check("W2 is woken by W1's node going",
                      expected="W2 takes it for the lock: W2 and the holder hold it at once",
                      observed=f"W2 holds: {entered}; the holder holds: {holder.held}",
                      agrees=entered and holder.held)
        else:
            run.check("W2 is woken by W1's node going",
                      expected="W2 looks again, sees the holder ahead, and waits",
                      observed=f"W2 holds: {entered}; the holder holds: {holder.held}",
                      agrees=not entered and holder.held)
        holder.release()
        w2_holds.wait(5)
        if w2.held:
            w2.release()


def _wait_until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the lab's queue never formed")
        time.sleep(0.01)


# --- C21: readers that share ------------------------------------------------------------

READERS = 3
READ_S = 0.3


def stage_read_write(run) -> None:
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "zk_fair", "one exclusive lock: a stocktake takes it like a sale"),
            ("fix", "zk_rw", "a read/write lock: stocktakes take the read lock and share it")):
        getattr(run, half)(strategy, how)
        factories = [run.open_locks(strategy, zk_hosts=zk.address) for _ in range(READERS + 1)]
        held: list[tuple[float, float]] = []
        start = threading.Barrier(READERS)

        def reader(factory) -> None:
            lock = factory.read_lock("product:1", timeout=10)
            start.wait()
            with lock:
                began = time.monotonic()
                time.sleep(READ_S)
                held.append((began, time.monotonic()))  # both ends inside the hold

        threads = [threading.Thread(target=reader, args=(f,)) for f in factories[:READERS]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        together = max(sum(b <= t < e for b, e in held) for t, _ in held)
        span = max(e for _, e in held) - min(b for b, _ in held)
        observed = f"at most {together} held it at once; all done in {span:.2f} s"
        if half == "broken":
            run.check(f"{READERS} stocktakes ask for the read lock at once, "
                      f"each reading for {READ_S:g} s",
                      expected=f"one at a time: about {READERS * READ_S:g} s",
                      observed=observed, agrees=together == 1)
        else:
            run.check(f"{READERS} stocktakes ask for the read lock at once, "
                      f"each reading for {READ_S:g} s",
                      expected=f"all {READERS} read together: about {READ_S:g} s",
                      observed=observed, agrees=together == READERS)
            _writer_waits_for_readers(run, factories)


def _writer_waits_for_readers(run, factories) -> None:
    readers = [f.read_lock("product:1") for f in factories[:2]]
    for lock in readers:
        lock.acquire()
    writer = factories[READERS].lock("product:1", timeout=0.3)
    refused = not writer.acquire()
    for lock in readers:
        lock.release()
    granted = factories[READERS].lock("product:1", timeout=5).acquire()
    run.check("a sale asks for the write lock while two stocktakes read",
              expected="it waits for the readers, and gets the lock when they are done",
              observed=f"refused while they read: {refused}; granted after: {granted}",
              agrees=refused and granted)


# --- C29: the same owner, again ---------------------------------------------------------------

def stage_zk_reentrant(run) -> None:
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "zk_simple", "one node, created by whoever asks: no owner is remembered"),
            ("fix", "zk_fair", "the owner is remembered with its node: it may enter again")):
        getattr(run, half)(strategy, how)
        factory = run.open_locks(strategy, zk_hosts=zk.address)
        outer = factory.lock("product:1")
        outer.acquire()
        inner = factory.lock("product:1", timeout=0.3)
        started = time.monotonic()
        again = inner.acquire()
        waited = time.monotonic() - started
        observed = f"acquired: {again} after {waited:.2f} s"
        if half == "broken":
            run.check("the holder asks for product:1 again (an inner call, timeout 0.3 s)",
                      expected="it waits for its own node, and gives up",
                      observed=observed, agrees=not again)
            outer.release()
            continue
        run.check("the holder asks for product:1 again (an inner call, timeout 0.3 s)",
                  expected="granted at once: the same owner", observed=observed,
                  agrees=again and waited < 0.3)
        inner.release()
        other = run.open_locks(strategy, zk_hosts=zk.address).lock("product:1", timeout=0.2)
        still = not other.acquire()
        outer.release()
        freed = other.acquire()
        run.check("the inner call releases; then the outer one; another owner asks each time",
                  expected="held after the inner release, free after the outer one",
                  observed=f"still held after the inner: {still}; free after the outer: {freed}",
                  agrees=still and freed)
        other.release()


LABS = (
    Lab("C02", "ticket_offices", "Two ticket offices sell the same seat; a ZooKeeper lock "
        "sells it once", ("A3",), ("zookeeper",), 2, stage_ticket_offices),
    Lab("C18", "zk_ephemeral", "A holder that dies: a SETNX key stays forever, a ZooKeeper "
        "ephemeral node goes with the session", ("A0", "A1", "A3"), ("redis", "zookeeper"), 6,
        stage_ephemeral),
    Lab("C19", "herd", "The simple ZooKeeper lock wakes every waiter on every release; the "
        "sequential one wakes one", ("A1", "A3"), ("zookeeper",), 3, stage_herd),
    Lab("C20", "arrival_order", "Sequential nodes serve waiters in arrival order; the simple "
        "lock lets a newcomer in first", ("A0", "A3", "A4"), ("zookeeper",), 3,
        stage_arrival_order),
    Lab("C21", "read_write", "A read/write lock lets readers share while a writer waits",
        ("A3",), ("zookeeper",), 3, stage_read_write),
    Lab("C38", "zk_fair_trusting", "A woken waiter must look at the queue again; a waiter that "
        "times out removes its own node", ("A3", "A4"), ("zookeeper",), 3, stage_look_again),
    Lab("C22", "session_expiry", "A ZooKeeper session that expires under a paused holder "
        "lets a second one in; the zxid token fences the first", ("A4",), ("zookeeper",), 2,
        stage_session_expiry),
    Lab("C30", "ensemble", "A ZooKeeper ensemble that loses its leader keeps locking: no "
        "single point of failure", ("A0", "A1"), ("zookeeper",), 15, stage_ensemble),
    Lab("C29", "zk_reentrant", "ZooKeeper re-entry: the owner kept with the node lets it enter "
        "again", ("A0", "A4"), ("zookeeper",), 2, stage_zk_reentrant),
)
