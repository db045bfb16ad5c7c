"""Labs of the Redis lock's evolution (A0, A1, A2, A4): from SETNX to a token
checked in Lua, and what each step of the way gets wrong.

Every lab here runs its two halves on the same Redis server: first the lock
the articles start with, then the one they end with.
"""

from __future__ import annotations

import threading
import time

import redis

from locks import LockLost
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.workshop.labs.record import Lab
from shop.config import Config
from shop.errors import StaleWriteRejected
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
    insert_order,
    read_stock,
    write_stock,
)
from shop.store.audit import take_audit
from shop.store.models import ProductKind
from shop.store.products import ProductSpec

#: Short leases, so that a lab waits fractions of a second for them to run out.
LEASE_MS = 200
SLOW_LEASE_MS = 1000
KEY = "lockshop:lock:product:1"


# --- C09, C10: a holder that dies inside its critical section -------------------------

def holder_dies(run, *, broken: str, how: str, faults: tuple[str, ...]) -> None:
    """Two shop instances; an order on shop-1 takes the lock and its process dies
    inside the critical section; then shop-2's buyers try. Broken, then ``redis``."""
    server, = run.parts.redis()
    folder = run.parts.folder(run.lab.name)
    config = Config(database_url=f"sqlite:///{folder / 'shop.db'}", redis_url=server.url,
                    lock_timeout_ms=300, lock_lease_ms=1500, faults=faults, admin_token="lab")
    with Cluster(config, instances=2, runtime_dir=folder) as cluster:
        shop1, shop2 = (ShopClient(url, "lab") for url in cluster.urls)
        for half, strategy in (("broken", broken), ("fix", "redis")):
            if half == "broken":
                run.broken(broken, how)
            else:
                run.fix("redis", "SET key token NX PX lease: one command, the expiry with it")
            server_client(server).flushall()
            for instance in list(cluster.instances):  # the last half killed one
                if instance.process.poll() is not None:
                    cluster.restart(instance.name)
            shop2.reset([{"sku": "x", "name": "Lab item", "stock": 5}])
            # Scheduled jobs off: their job lock is this lock too, and with the crash
            # hook a job taking it would kill an instance in the middle of the lab.
            shop2.set_settings(strategy=strategy, business_delay_ms=5000, job_interval_ms=0)
            crash_hook = half == "broken" and faults
            if crash_hook:
                shop2.set_settings(business_delay_ms=0)
                answer = shop1.order()
                action = "shop-1 takes an order; its process dies between SETNX and EXPIRE"
            else:
                holder = threading.Thread(target=shop1.order)
                holder.start()
                _wait_for(lambda: server_client(server).exists(KEY))
                cluster.kill("shop-1")
                holder.join()
                shop2.set_settings(business_delay_ms=0)
                answer = "killed"
                action = "shop-1 takes the lock and is killed (SIGKILL) inside its critical section"
            ttl = server_client(server).pttl(KEY)
            if half == "broken":
                run.check(action, expected="the lock key is left with no expiry (TTL -1)",
                          observed=f"TTL {ttl} (shop-1's order: {answer})", agrees=ttl == -1)
            else:
                run.check(action, expected="the lock key is left, but with its lease running",
                          observed=f"TTL {ttl} ms", agrees=0 < ttl <= 1500)
            answer = shop2.order()
            run.check("an order on shop-2 waits for the lock (300 ms)",
                      expected="503: the lock cannot be had", observed=str(answer),
                      agrees=answer == 503)
            time.sleep(1.6)
            later = shop2.order()
            if half == "broken":
                run.check("1.6 s later, another order on shop-2",
                          expected="503 still: nobody will ever delete the key",
                          observed=str(later), agrees=later == 503)
                if crash_hook:
                    continue  # every instance has the hook: a new holder would crash too
                server_client(server).delete(KEY)
                after = shop2.order()
                run.check(f"an admin runs DEL {KEY} by hand; the next order",
                          expected="201: only a person could free it", observed=str(after),
                          agrees=after == 201)
            else:
                run.check("1.6 s later (past the 1.5 s lease), another order on shop-2",
                          expected="201: the key expired by itself", observed=str(later),
                          agrees=later == 201)


def stage_setnx(run) -> None:
    holder_dies(run, broken="redis_setnx", how="SETNX key token, DEL to release; no expiry",
                faults=())


def stage_setnx_expire(run) -> None:
    holder_dies(run, broken="redis_setnx_expire",
                how="SETNX, then EXPIRE as a second command (fault hook: crash between them)",
                faults=("crash_after_setnx",))


# --- C11, C12: a release that deletes someone else's lock ----------------------------

def stage_plain_del(run) -> None:
    """A's lease runs out while it works; B takes the lock; A releases."""
    versions = (("redis_plain_del", "SET NX PX, released by a plain DEL"),
                ("redis", "a token per holder; released by a Lua compare-and-delete"))
    for half, (strategy, how) in zip(("broken", "fix"), versions, strict=True):
        getattr(run, half)(strategy, how)
        server, = run.parts.redis()
        factory = run.open_locks(strategy, redis_url=server.url, lease_ms=LEASE_MS)
        sessions = run.shop_database()
        a, b, c = (factory.lock("product:1") for _ in range(3))
        a.acquire()
        time.sleep(LEASE_MS * 1.5 / 1000)
        run.check(f"A takes the lock (lease {LEASE_MS} ms) and works for {LEASE_MS * 1.5:g} ms",
                  expected="A's key expires while A still works",
                  observed=f"key exists: {bool(server_client(server).exists(KEY))}",
                  agrees=not server_client(server).exists(KEY))
        run.check("B asks for the lock", expected="B gets it",
                  observed=f"B holds: {b.acquire(blocking=False)}", agrees=b.held)
        released = _release(a)
        left = bool(server_client(server).exists(KEY))
        if half == "broken":
            run.check("A finishes and releases", expected="its DEL deletes B's lock",
                      observed=f"A {released}; the key exists: {left}", agrees=not left)
        else:
            run.check("A finishes and releases",
                      expected="refused: the key holds B's token, not A's; B keeps it",
                      observed=f"A {released}; the key exists: {left}",
                      agrees=left and released.startswith("was refused"))
        _judge_holders(run, half, _third_holder_and_sale(run, sessions, b, c))


def stage_get_del(run) -> None:
    """A releases by GET, compare, DEL, and is paused between the GET and the DEL."""
    versions = (("redis_get_del", "SET NX PX; release by GET, compare, then DEL "
                                  "(fault hook: a pause between the two)"),
                ("redis", "compare and delete in one Lua script: nothing can fall between"))
    for half, (strategy, how) in zip(("broken", "fix"), versions, strict=True):
        getattr(run, half)(strategy, how)
        server, = run.parts.redis()
        # A longer lease here: the hook's pause (1.5 leases) must end well after B is in.
        factory = run.open_locks(strategy, redis_url=server.url, lease_ms=SLOW_LEASE_MS,
                                 faults=("pause_before_del",))
        sessions = run.shop_database()
        a, b, c = (factory.lock("product:1") for _ in range(3))
        a.acquire()
        outcome: list[str] = []
        releasing = threading.Thread(target=lambda: outcome.append(_release(a)))
        if half == "broken":
            releasing.start()  # GET says the lock is A's; then the pause, inside the release
        else:  # one script: the only place a pause can go is before it
            time.sleep(SLOW_LEASE_MS * 1.5 / 1000)
        _wait_for(lambda: not server_client(server).exists(KEY))
        run.check("A releases, and is paused for longer than the lease on the way",
                  expected="A's key expires during the pause",
                  observed=f"key exists: {bool(server_client(server).exists(KEY))}",
                  agrees=not server_client(server).exists(KEY))
        run.check("B asks for the lock", expected="B gets it",
                  observed=f"B holds: {b.acquire(blocking=False)}", agrees=b.held)
        if half == "fix":
            releasing.start()
        releasing.join()
        left = bool(server_client(server).exists(KEY))
        if half == "broken":
            run.check("A's release goes on: its DEL", expected="deletes B's lock",
                      observed=f"A {outcome[0]}; the key exists: {left}", agrees=not left)
        else:
            run.check("A's release goes on: the script",
                      expected="compares the token and refuses; B keeps the lock",
                      observed=f"A {outcome[0]}; the key exists: {left}",
                      agrees=left and outcome[0].startswith("was refused"))
        _judge_holders(run, half, _third_holder_and_sale(run, sessions, b, c))


def _third_holder_and_sale(run, sessions, b, c) -> tuple[bool, int]:
    """C asks for the lock; everyone who holds it sells the last unit. (holders, oversold)"""
    c.acquire(blocking=False)
    holders = [lock for lock in (b, c) if lock.held]
    context = OrderContext("lab", run.lab.name, 0, 1000)
    seen = {}
    for holder in holders:
        with sessions.begin() as session:
            seen[id(holder)] = read_stock(session, 1, ProductKind.ITEM)[0]
    for holder in holders:
        with sessions.begin() as session:
            write_stock(session, 1, seen[id(holder)] - 1)
            insert_order(session, OrderRequest(1), None, context)
    return len(holders) == 2, take_audit(sessions).products[0].oversold


def _judge_holders(run, half: str, outcome: tuple[bool, int]) -> None:
    both, oversold = outcome
    if half == "broken":
        run.check("C asks for the lock; every holder sells the last unit",
                  expected="C gets it too: B and C hold it at once, and 2 of 1 are sold",
                  observed=f"two holders: {both}; oversold {oversold}",
                  agrees=both and oversold == 1)
    else:
        run.check("C asks for the lock; every holder sells the last unit",
                  expected="C is refused: B alone holds it and sells the one unit",
                  observed=f"two holders: {both}; oversold {oversold}",
                  agrees=not both and oversold == 0)


# --- C13: asking again for a lock you hold ---------------------------------------------

def stage_reentrant(run) -> None:
    """The holder of product:1 calls code that takes the same lock again."""
    versions = (("redis", "SET NX PX: one token per acquire, not per owner"),
                ("redis_reentrant", "a hash of owner -> count, changed only in Lua"))
    for half, (strategy, how) in zip(("broken", "fix"), versions, strict=True):
        getattr(run, half)(strategy, how)
        server, = run.parts.redis()
        factory = run.open_locks(strategy, redis_url=server.url, lease_ms=5000)
        outer = factory.lock("product:1")
        outer.acquire()
        inner = factory.lock("product:1", timeout=0.3)
        started = time.monotonic()
        again = inner.acquire()
        waited = time.monotonic() - started
        if half == "broken":
            run.check("the holder asks for product:1 again (an inner call, timeout 0.3 s)",
                      expected="it waits for itself, and gives up when the timeout ends",
                      observed=f"acquired: {again} after {waited:.2f} s",
                      agrees=not again and waited >= 0.3)
            outer.release()
            continue
        run.check("the holder asks for product:1 again (an inner call, timeout 0.3 s)",
                  expected="granted at once: the same owner, the count goes to 2",
                  observed=f"acquired: {again} after {waited:.2f} s; "
                           f"count {_owner_count(server, outer)}",
                  agrees=again and waited < 0.3 and _owner_count(server, outer) == 2)
        inner.release()
        run.check("the inner call releases", expected="the count goes to 1; the lock stays",
                  observed=f"count {_owner_count(server, outer)}",
                  agrees=_owner_count(server, outer) == 1)
        outer.release()
        run.check("the outer call releases", expected="the count reaches 0: the key is deleted",
                  observed=f"key exists: {bool(server_client(server).exists(KEY))}",
                  agrees=not server_client(server).exists(KEY))


def _owner_count(server, lock) -> int:
    return int(server_client(server).hget(KEY, lock.holder) or 0)


# --- C27, C28: re-entry done wrong --------------------------------------------------------------

def _another_owner_tries(factory) -> bool:
    """Another thread (another owner) asks for product:1 without waiting; did it get in?"""
    got_in: list[bool] = []
    thread = threading.Thread(target=lambda: got_in.append(
        factory.lock("product:1").acquire(blocking=False)))
    thread.start()
    thread.join()
    return got_in[0]


def stage_inner_release(run) -> None:
    """The holder re-enters, and its inner call releases before the outer one is done."""
    server, = run.parts.redis()
    for half, strategy, how in (
            ("broken", "redis_reentrant_del", "re-entry counted in a hash, but released by DEL"),
            ("fix", "redis_reentrant", "the release counts down, and deletes at zero")):
        getattr(run, half)(strategy, how)
        factory = run.open_locks(strategy, redis_url=server.url, lease_ms=5000)
        outer, inner = factory.lock("product:1"), factory.lock("product:1")
        outer.acquire()
        inner.acquire()
        inner.release()
        other_got_in = _another_owner_tries(factory)
        if half == "broken":
            run.check("the holder re-enters, its inner call releases; another owner asks",
                      expected="the key is gone: the other owner gets in while the outer "
                               "section still works",
                      observed=f"other owner got in: {other_got_in}", agrees=other_got_in)
        else:
            run.check("the holder re-enters, its inner call releases; another owner asks",
                      expected="refused: the outer hold still counts 1",
                      observed=f"other owner got in: {other_got_in}", agrees=not other_got_in)
        outer.release()
        server_client(server).delete(KEY)


def stage_acquire_in_steps(run) -> None:
    """Two owners ask at the same moment; one is paused between EXISTS and HSET."""
    server, = run.parts.redis()
    for half, strategy, how in (
            ("broken", "redis_reentrant_steps", "EXISTS, then HSET, then PEXPIRE: separate "
                                                "commands (fault hook: a pause after EXISTS)"),
            ("fix", "redis_reentrant", "the same steps in one Lua script")):
        getattr(run, half)(strategy, how)
        paused = run.open_locks(strategy, redis_url=server.url, lease_ms=2000,
                                faults=("pause_after_exists",))
        other = run.open_locks(strategy, redis_url=server.url, lease_ms=2000)
        a, b = paused.lock("product:1"), other.lock("product:1")
        a_holds: list[bool] = []
        asking = threading.Thread(target=lambda: a_holds.append(a.acquire(blocking=False)))
        asking.start()
        time.sleep(0.2)  # A has seen EXISTS say 0, and is in its pause (1 s)
        b_holds = b.acquire(blocking=False)
        asking.join()
        owners = server_client(server).hlen(KEY)
        observed = f"A holds: {a_holds[0]}, B holds: {b_holds}; owners in the hash: {owners}"
        if half == "broken":
            run.check("A and B ask for product:1; A pauses between EXISTS and HSET",
                      expected="both saw no key, both wrote their name: two holders",
                      observed=observed, agrees=a_holds[0] and b_holds and owners == 2)
        else:
            run.check("A and B ask for product:1 at the same moment",
                      expected="one script at a time: one holder, the other refused",
                      observed=observed, agrees=a_holds[0] != b_holds and owners == 1)
        server_client(server).delete(KEY)


# --- C15: a holder paused past its lease, and the fencing token -----------------------------

def stage_fencing(run) -> None:
    """A checks it holds the lock, is paused (GC, SIGSTOP) past its lease, then writes."""
    versions = (("redis, unfenced write", "the write trusts the holder's last check"),
                ("redis, fenced write", "the write carries the lock's token: stale ones refused"))
    for half, (strategy, how) in zip(("broken", "fix"), versions, strict=True):
        getattr(run, half)(strategy, how)
        server, = run.parts.redis()
        factory = run.open_locks("redis", redis_url=server.url, lease_ms=LEASE_MS)
        sessions = run.shop_database(ProductSpec("x", "Lab item", ProductKind.ITEM, stock=5))
        context = OrderContext("lab", "redis", 0, 1000)
        a, b = factory.lock("product:1"), factory.lock("product:1")
        a.acquire()
        with sessions.begin() as session:
            a_read = read_stock(session, 1, ProductKind.ITEM)[0]
        a.ensure_held()
        time.sleep(LEASE_MS * 1.5 / 1000)
        run.check(f"A reads stock {a_read}, checks it still holds the lock, and is paused "
                  f"for {LEASE_MS * 1.5:g} ms (its lease: {LEASE_MS} ms)",
                  expected="the lease runs out during the pause",
                  observed=f"key exists: {bool(server_client(server).exists(KEY))}",
                  agrees=not server_client(server).exists(KEY))
        b.acquire(blocking=False)
        with sessions.begin() as session:
            b_read = read_stock(session, 1, ProductKind.ITEM)[0]
            write_stock(session, 1, b_read - 1, fencing_token=b.fencing_token)
            insert_order(session, OrderRequest(1), None, context)
        b.release()
        run.check("B takes the lock and sells one unit",
                  expected="B writes stock 4", observed=f"B read {b_read}, wrote {b_read - 1}",
                  agrees=b_read == 5)
        token = a.fencing_token if half == "fix" else None
        try:
            with sessions.begin() as session:
                write_stock(session, 1, a_read - 1, fencing_token=token)
                insert_order(session, OrderRequest(1), None, context)
            a_outcome = "written"
        except StaleWriteRejected:
            a_outcome = "refused as stale"
        product = take_audit(sessions).products[0]
        figures = (f"A's write {a_outcome}; sold {product.sold}, stock {product.remaining}, "
                   f"lost updates {product.lost_updates}")
        if half == "broken":
            run.check("A wakes up and writes what it computed before the pause: stock 4",
                      expected="written over B's sale: 2 sold, stock 4, one update lost",
                      observed=figures, agrees=a_outcome == "written" and product.lost_updates == 1)
        else:
            run.check("A wakes up and writes stock 4 with its token (older than B's)",
                      expected="refused as stale: 1 sold, stock 4, nothing lost",
                      observed=figures,
                      agrees=a_outcome == "refused as stale" and product.lost_updates == 0
                      and product.sold == 1)


# --- C16: one Redis, or a majority of five ------------------------------------------------

def stage_redlock(run) -> None:
    run.broken("redis", "one Redis server: it is the lock")
    server, = run.parts.redis()
    factory = run.open_locks("redis", redis_url=server.url, lease_ms=2000)
    server.kill()
    outcome = _try(factory.lock("product:1", timeout=0.2))
    run.check("the one Redis server dies; a buyer asks for the lock",
              expected="no lock at all: backend unavailable (the shop answers 503)",
              observed=outcome, agrees=outcome.startswith("BackendUnavailable"))
    run.parts.redis()  # start it again, empty, for the next lab

    run.fix("redlock", "five independent servers; a majority within the validity time")
    servers = run.parts.redis(5)
    factory = run.open_locks("redlock", redis_urls=tuple(s.url for s in servers), lease_ms=2000)
    servers[0].kill()
    servers[3].kill()
    holder = factory.lock("product:1", timeout=0.2)
    outcome = _try(holder)
    other = _try(factory.lock("product:1", timeout=0.2))
    run.check("two of the five servers die; two buyers ask for the lock",
              expected="the first holds it (3 of 5 said yes), the second is refused",
              observed=f"first: {outcome}; second: {other}",
              agrees=outcome == "acquired" and other == "refused")
    holder.release()
    servers[1].kill()
    outcome = _try(factory.lock("product:1", timeout=0.2))
    leftovers = sum(server_client(s).exists(KEY) for s in servers[2::2])
    run.check("a third server dies; a buyer asks for the lock",
              expected="refused: 2 of 5 is no majority (503), nothing left on the two",
              observed=f"{outcome}; keys left: {leftovers}",
              agrees=outcome.startswith("BackendUnavailable") and leftovers == 0)


# --- C17: a Redlock server that forgets ---------------------------------------------------------

def stage_redlock_restart(run) -> None:
    """A locks on a majority while two servers are cut off from it; one of its three
    restarts without persistence; B asks."""
    for half, how, delay_s in (
            ("broken", "a server restarts at once after a crash, with no persistence", 0.0),
            ("fix", "the same server restarts only after the longest lease has run out, as "
                    "the Redlock write-up advises", 1.6)):
        getattr(run, half)("redlock", how)
        servers = run.parts.redis(5)
        urls = tuple(s.url for s in servers)
        servers[3].stop()
        servers[4].stop()
        a = run.open_locks("redlock", redis_urls=urls, lease_ms=1500).lock("product:1")
        run.check("A asks for the lock while servers 4 and 5 are cut off from it",
                  expected="A holds it on servers 1, 2 and 3: a majority of five",
                  observed=f"A holds: {a.acquire(blocking=False)}", agrees=a.held)
        servers[3].start()
        servers[4].start()
        time.sleep(delay_s)
        servers[2].restart()  # no persistence: it comes back empty
        b = run.open_locks("redlock", redis_urls=urls, lease_ms=1500).lock("product:1")
        b_holds = b.acquire(blocking=False)
        try:
            a.ensure_held()
            a_holds = True
        except LockLost:
            a_holds = False
        observed = f"B holds: {b_holds}; A still holds (its validity not over): {a_holds}"
        if half == "broken":
            run.check("server 3 crashes and restarts empty; B asks for the lock",
                      expected="servers 3, 4 and 5 say yes to B: a majority, while A's is "
                               "still valid: two holders",
                      observed=observed, agrees=b_holds and a_holds)
        else:
            run.check("server 3 crashes and restarts empty, 1.6 s later; B asks for the lock",
                      expected="B gets it, but only after A's lease is over: A knows it lost "
                               "it, one holder at a time",
                      observed=observed, agrees=b_holds and not a_holds)


# --- C31: one Redis is a single point ------------------------------------------------------------

def stage_single_point(run) -> None:
    servers = run.parts.redis(5)
    folder = run.parts.folder(run.lab.name)
    config = Config(database_url=f"sqlite:///{folder / 'shop.db'}", redis_url=servers[0].url,
                    redis_urls=tuple(s.url for s in servers), lock_timeout_ms=500)
    with Cluster(config, instances=2, runtime_dir=folder) as cluster:
        admin = ShopClient(cluster.urls[0])
        for half, strategy, how in (
                ("broken", "redis", "one Redis server: the lock service is one process"),
                ("fix", "redlock", "five independent servers: any three make the lock")):
            getattr(run, half)(strategy, how)
            admin.reset([{"sku": "x", "stock": 20}])
            admin.set_settings(strategy=strategy, business_delay_ms=0, job_interval_ms=0)
            servers[0].kill()
            answers = [ShopClient(cluster.urls[n % 2]).order() for n in range(6)]
            product = admin.audit()["products"][0]
            observed = f"answers {answers}; oversold {product['oversold']}"
            if half == "broken":
                run.check("the Redis server dies; 6 orders come in",
                          expected="every order is refused with 503 (no lock, no sale), and "
                                   "nothing is oversold", observed=observed,
                          agrees=answers == [503] * 6 and product["oversold"] == 0)
                run.parts.redis(5)  # the server comes back (empty)
                later = [ShopClient(cluster.urls[n % 2]).order() for n in range(2)]
                run.check("the Redis server comes back; 2 more orders",
                          expected="sold: the shop recovers by itself, no restart",
                          observed=str(later), agrees=later == [201, 201])
            else:
                run.check("one of the five servers dies; 6 orders come in",
                          expected="every order is sold: four servers are still a majority",
                          observed=observed,
                          agrees=answers == [201] * 6 and product["oversold"] == 0)
                run.parts.redis(5)


# --- C33: Redlock's validity -----------------------------------------------------------------------

def stage_redlock_validity(run) -> None:
    servers = run.parts.redis(5)
    run.measure("redlock", "five servers, a 2 s lease, 100 ms per server before it counts as "
                "down; two, then three servers paused (SIGSTOP): they hold their connections "
                "and answer nothing")
    factory = run.open_locks("redlock", redis_urls=tuple(s.url for s in servers), lease_ms=2000)
    servers[0].pause()
    servers[1].pause()
    try:
        lock = factory.lock("product:1")
        held = lock.acquire(blocking=False)
        drift = 2000 * 0.01 + 2
        run.check("A asks for the lock with two servers paused",
                  expected="granted by three; each paused server costs only its 100 ms "
                           "timeout, and the validity is the lease less that wait less the "
                           "drift",
                  observed=f"granted: {held}; acquiring took {lock.elapsed_ms:.0f} ms; "
                           f"validity {lock.validity_ms:.0f} ms = 2000 - {lock.elapsed_ms:.0f} "
                           f"- {drift:.0f}",
                  agrees=held and 80 <= lock.elapsed_ms < 500
                  and abs(lock.validity_ms - (2000 - lock.elapsed_ms - drift)) < 1)
        lock.release()
        servers[2].pause()
        outcome = _try(factory.lock("product:1"))
        left = sum(server_client(s).exists(KEY) for s in servers[3:])
        run.check("B asks with three servers paused",
                  expected="refused (two of five is no majority), and the two that said yes "
                           "are unlocked at once",
                  observed=f"{outcome.split(':')[0]}; keys left on the two: {left}",
                  agrees=outcome.startswith("BackendUnavailable") and left == 0)
    finally:
        for server in servers[:3]:
            server.resume()


# --- small helpers ---------------------------------------------------------------------------

def server_client(server) -> redis.Redis:
    return redis.Redis(port=server.port)


def _release(lock) -> str:
    try:
        lock.release()
        return "released"
    except LockLost as error:
        return f"was refused ({error.reason})"


def _try(lock) -> str:
    try:
        return "acquired" if lock.acquire() else "refused"
    except Exception as error:  # noqa: BLE001 - what happened is the observation
        return f"{type(error).__name__}: {error}"


def _wait_for(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the lab's holder never took the lock")
        time.sleep(0.01)


LABS = (
    Lab("C09", "redis_setnx", "SETNX with no expiry: a killed holder blocks everyone; "
        "SET NX PX frees it after one lease", ("A0", "A1"), ("redis", "instances"), 12,
        stage_setnx),
    Lab("C10", "redis_setnx_expire", "SETNX then EXPIRE: a crash between them leaves a lock "
        "with no expiry; one SET NX PX cannot", ("A1", "A4"), ("redis", "instances"), 10,
        stage_setnx_expire),
    Lab("C11", "redis_plain_del", "A lease shorter than the work: a plain DEL frees the next "
        "holder's lock; a token-checked release refuses", ("A0", "A2"), ("redis",), 2,
        stage_plain_del),
    Lab("C12", "redis_get_del", "GET, compare, then DEL has the same window; a Lua script "
        "closes it", ("A0", "A2", "A4"), ("redis",), 2, stage_get_del),
    Lab("C13", "redis_reentrant", "A non-reentrant lock deadlocks on its holder; a hash of "
        "owner to count fixes it", ("A0",), ("redis",), 1, stage_reentrant),
    Lab("C17", "redlock_restart", "Redlock's weakness: a server that restarts without "
        "persistence forgets a key, and a second client gets a majority", ("A4",), ("redis",),
        3, stage_redlock_restart),
    Lab("C31", "single_point", "A single Redis is a single point: while it is down nothing "
        "sells (and nothing is oversold); five Redlock servers go on", ("A4",),
        ("redis", "instances"), 8, stage_single_point),
    Lab("C33", "redlock_validity", "Redlock's validity: the lease less the time spent "
        "acquiring less the drift; a short per-server timeout; a failed attempt unlocks every "
        "server", ("A1", "A4"), ("redis",), 2, stage_redlock_validity, measured=True),
    Lab("C27", "redis_reentrant_del", "A reentrant lock whose inner release deletes the key "
        "leaves the outer section unprotected; count down instead", ("A0",), ("redis",), 1,
        stage_inner_release),
    Lab("C28", "redis_reentrant_steps", "A reentrant acquire in separate commands lets two "
        "owners in; one Lua script does not", ("A0",), ("redis",), 2, stage_acquire_in_steps),
    Lab("C15", "fencing", "A holder paused past its lease writes after another took the lock; "
        "a fencing token refuses the stale write", ("A4",), ("redis",), 1, stage_fencing),
    Lab("C16", "redlock_majority", "Redlock: a majority of five survives two servers down and "
        "refuses with three", ("A1", "A4"), ("redis",), 2, stage_redlock),
)
