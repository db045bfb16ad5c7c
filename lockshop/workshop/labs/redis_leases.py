"""Labs of the Redis lock's evolution (A0, A1, A2, A4): from SETNX to a token
checked in Lua, and what each step of the way gets wrong.

Every lab here runs its two halves on the same Redis server: first the lock
the articles start with, then the one they end with.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import redis

from locks import LockLost
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.workshop.staging import steps
from lockshop.workshop.staging.record import Lab
from shop.config import Config
from shop.store.audit import take_audit
from shop.store.models import ProductKind
from shop.store.products import ProductSpec
from shop.i18n import N_, _, yes_no
from shop.i18n.lock_errors import named, say_reason

#: Short leases, so that a lab waits fractions of a second for them to run out.
LEASE_MS = 200
#: Where the lab itself works inside the lease before the pause that outlasts it (C12's
#: holder stopped before its DEL, C15's read and check): a machine busy with other work
#: once took longer than 200 ms over C15's read and check, and its lease ran out first.
SLOW_LEASE_MS = 1000
#: The lease of B and C in C11 and C12: longer than the lab, never the one that runs out.
OTHERS_LEASE_MS = 30_000
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
                run.fix("redis", _("SET key token NX PX lease: one command, the expiry with "
                                   "it"))
            server_client(server).flushall()
            for instance in list(cluster.instances):  # the last half killed one
                if instance.process.poll() is not None:
                    cluster.restart(instance.name)
            shop2.reset([{"sku": "x", "name": "Lab item", "stock": 5}])
            # Scheduled jobs off: their job lock is this lock too, and with the crash
            # hook a job taking it would kill an instance in the middle of the lab.
            shop2.set_settings(strategy=run.version(strategy), business_delay_ms=5000,
                               job_interval_ms=0)
            crash_hook = half == "broken" and faults
            if crash_hook:
                shop2.set_settings(business_delay_ms=0)
                answer = shop1.order()
                action = _("shop-1 takes an order; its process dies between SETNX and "
                           "EXPIRE")
            else:
                holder = threading.Thread(target=shop1.order)
                holder.start()
                wait_for(lambda: server_client(server).exists(KEY), "shop-1 to take the lock")
                cluster.kill("shop-1")
                holder.join()
                shop2.set_settings(business_delay_ms=0)
                answer = _("killed")
                action = _("shop-1 takes the lock and is killed (SIGKILL) inside its critical "
                           "section")
            ttl = server_client(server).pttl(KEY)
            if half == "broken":
                run.check(action, expected=_("the lock key is left with no expiry (TTL -1)"),
                          observed=_("TTL %(ttl)s (shop-1's order: %(answer)s)", ttl=ttl,
                                     answer=answer),
                          agrees=ttl == -1)
            else:
                run.check(action,
                          expected=_("the lock key is left, but with its lease running"),
                          observed=_("TTL %(ttl)s ms", ttl=ttl), agrees=0 < ttl <= 1500)
            answer = shop2.order()
            run.check(_("an order on shop-2 waits for the lock (300 ms)"),
                      expected=_("503: the lock cannot be had"), observed=str(answer),
                      agrees=answer == 503)
            time.sleep(1.6)
            later = shop2.order()
            if half == "broken":
                run.check(_("1.6 s later, another order on shop-2"),
                          expected=_("503 still: nobody will ever delete the key"),
                          observed=str(later), agrees=later == 503)
                if crash_hook:
                    continue  # every instance has the hook: a new holder would crash too
                server_client(server).delete(KEY)
                after = shop2.order()
                run.check(_("an admin runs DEL %(key)s by hand; the next order", key=KEY),
                          expected=_("201: only a person could free it"), observed=str(after),
                          agrees=after == 201)
            else:
                run.check(_("1.6 s later (past the 1.5 s lease), another order on shop-2"),
                          expected=_("201: the key expired by itself"), observed=str(later),
                          agrees=later == 201)


def stage_setnx(run) -> None:
    holder_dies(run, broken="redis_setnx", how=_("SETNX key token, DEL to release; no expiry"),
                faults=())


def stage_setnx_expire(run) -> None:
    holder_dies(run, broken="redis_setnx_expire",
                how=_("SETNX, then EXPIRE as a second command (fault hook: crash between "
                      "them)"),
                faults=("crash_after_setnx",))


# --- C11, C12: a release that deletes someone else's lock ----------------------------

def stage_plain_del(run) -> None:
    """A's lease runs out while it works; B takes the lock; A releases."""
    versions = (("redis_plain_del", _("SET NX PX, released by a plain DEL")),
                ("redis", _("a token per holder; released by a Lua compare-and-delete")))
    for half, (strategy, how) in zip(("broken", "fix"), versions, strict=True):
        getattr(run, half)(strategy, how)
        owners = ThreeOwners(run, strategy, lease_ms=LEASE_MS)
        owners.a.acquire()
        time.sleep(LEASE_MS * 1.5 / 1000)  # A works on, past its lease
        owners.check_a_lost_the_key(
            _("A takes the lock (lease %(lease)s ms) and works for %(works)s ms",
              lease=LEASE_MS, works=f"{LEASE_MS * 1.5:g}"),
            expected=_("A's key expires while A still works"))
        owners.check_b_gets_it()
        owners.check_a_released(half, release_outcome(owners.a), _("A finishes and releases"),
                                deletes=_("its DEL deletes B's lock"),
                                refuses=_("refused: the key holds B's token, not A's; B keeps "
                                          "it"))
        owners.check_c_and_the_sale(half)


def stage_get_del(run) -> None:
    """A releases by GET, compare, DEL, and is paused between the GET and the DEL."""
    versions = (("redis_get_del", _("SET NX PX; release by GET, compare, then DEL (fault hook: "
                                    "a pause between the two)")),
                ("redis", _("compare and delete in one Lua script: nothing can fall between")))
    for half, (strategy, how) in zip(("broken", "fix"), versions, strict=True):
        getattr(run, half)(strategy, how)
        # A longer lease here: the hook's pause (1.5 leases) must end well after B is in.
        owners = ThreeOwners(run, strategy, lease_ms=SLOW_LEASE_MS, faults=("pause_before_del",))
        owners.a.acquire()
        outcome: list[Release] = []
        releasing = threading.Thread(target=lambda: outcome.append(release_outcome(owners.a)))
        if half == "broken":
            releasing.start()  # GET says the lock is A's; then the pause, inside the release
        else:  # one script: the only place a pause can go is before it
            time.sleep(SLOW_LEASE_MS * 1.5 / 1000)
        wait_for(lambda: not owners.key_exists(), "A's key to expire")
        owners.check_a_lost_the_key(_("A releases, and is paused for longer than the lease on "
                                      "the way"), expected=_("A's key expires during the pause"))
        owners.check_b_gets_it()
        if half == "fix":
            releasing.start()
        releasing.join()
        owners.check_a_released(half, outcome[0],
                                _("A's release goes on: its DEL") if half == "broken"
                                else _("A's release goes on: the script"),
                                deletes=_("deletes B's lock"),
                                refuses=_("compares the token and refuses; B keeps the lock"))
        owners.check_c_and_the_sale(half)


class ThreeOwners:
    """A, B and C, three owners of product:1's lock under ``strategy`` on the lab's Redis,
    and a shop database to sell from: the cast of C11 and C12, and the checks of what
    the two labs have in common once A's lease has run out."""

    def __init__(self, run, strategy: str, *, lease_ms: int, **backends) -> None:
        self.run = run
        self.server, = run.parts.redis()
        factory = run.open_locks(strategy, redis_url=self.server.url, lease_ms=lease_ms,
                                 **backends)
        # Only A's lease is the lesson. B's and C's last the whole lab, so that B still
        # holds when A releases however slow the machine (B once lost a 200 ms lease
        # before A's release on a loaded one).
        others = run.open_locks(strategy, redis_url=self.server.url,
                                lease_ms=OTHERS_LEASE_MS, **backends)
        self.sessions = run.shop_database()
        self.a = factory.lock("product:1")
        self.b, self.c = others.lock("product:1"), others.lock("product:1")

    def key_exists(self) -> bool:
        return bool(server_client(self.server).exists(KEY))

    def check_a_lost_the_key(self, action: str, expected: str) -> None:
        exists = self.key_exists()
        self.run.check(action, expected=expected,
                       observed=_("key exists: %(exists)s", exists=yes_no(exists)),
                       agrees=not exists)

    def check_b_gets_it(self) -> None:
        self.run.check(_("B asks for the lock"), expected=_("B gets it"),
                       observed=_("B holds: %(held)s",
                                  held=yes_no(self.b.acquire(blocking=False))),
                       agrees=self.b.held)

    def check_a_released(self, half: str, released: Release, action: str, *, deletes: str,
                         refuses: str) -> None:
        """What A's late release did: the broken lock ``deletes`` B's key; the fix
        ``refuses``, and B keeps it."""
        left = self.key_exists()
        observed = _("A %(released)s; the key exists: %(exists)s", released=released.said,
                     exists=yes_no(left))
        if half == "broken":
            self.run.check(action, expected=deletes, observed=observed, agrees=not left)
        else:
            self.run.check(action, expected=refuses, observed=observed,
                           agrees=left and released.refused)

    def check_c_and_the_sale(self, half: str) -> None:
        """C asks for the lock; everyone who holds it sells the last unit."""
        self.c.acquire(blocking=False)
        holders = [lock for lock in (self.b, self.c) if lock.held]
        # every holder reads, then every one writes
        seen = [steps.read(self.sessions) for _holder in holders]
        for stock_read in seen:
            steps.sell(self.sessions, stock_read)
        both, oversold = len(holders) == 2, take_audit(self.sessions).products[0].oversold
        observed = _("two holders: %(both)s; oversold %(oversold)s", both=yes_no(both),
                     oversold=oversold)
        action = _("C asks for the lock; every holder sells the last unit")
        if half == "broken":
            self.run.check(action, expected=_("C gets it too: B and C hold it at once, and 2 "
                                              "of 1 are sold"),
                           observed=observed, agrees=both and oversold == 1)
        else:
            self.run.check(action, expected=_("C is refused: B alone holds it and sells the "
                                              "one unit"),
                           observed=observed, agrees=not both and oversold == 0)
        server_client(self.server).delete(KEY)  # B's or C's long lease: the next half starts free


# --- C15: a holder paused past its lease, and the fencing token -----------------------------

def stage_fencing(run) -> None:
    """A checks it holds the lock, is paused (GC, SIGSTOP) past its lease, then writes."""
    versions = ((_("redis, unfenced write"), _("the write trusts the holder's last check")),
                (_("redis, fenced write"), _("the write carries the lock's fencing token: stale "
                                             "ones refused")))
    for half, (strategy, how) in zip(("broken", "fix"), versions, strict=True):
        getattr(run, half)(strategy, how)
        server, = run.parts.redis()
        factory = run.open_locks("redis", redis_url=server.url, lease_ms=SLOW_LEASE_MS)
        sessions = run.shop_database(ProductSpec("x", "Lab item", ProductKind.ITEM, stock=5))
        a, b = factory.lock("product:1"), factory.lock("product:1")
        a.acquire()
        a_read = steps.read(sessions)
        a.ensure_held()
        time.sleep(SLOW_LEASE_MS * 1.5 / 1000)
        run.check(_("A reads stock %(read)s, checks it still holds the lock, and is paused "
                    "for %(paused)s ms (its lease: %(lease)s ms)", read=a_read,
                    paused=f"{SLOW_LEASE_MS * 1.5:g}", lease=SLOW_LEASE_MS),
                  expected=_("the lease runs out during the pause"),
                  observed=_("key exists: %(exists)s",
                             exists=yes_no(bool(server_client(server).exists(KEY)))),
                  agrees=not server_client(server).exists(KEY))
        b.acquire(blocking=False)
        b_read = steps.read(sessions)
        steps.sell(sessions, b_read, b.fencing_token)
        b.release()
        run.check(_("B takes the lock and sells one unit"),
                  expected=_("B writes stock 4"),
                  observed=_("B read %(read)s, wrote %(wrote)s", read=b_read, wrote=b_read - 1),
                  agrees=b_read == 5)
        steps.late_write(run, sessions, a_read, a.fencing_token if half == "fix" else None,
                         action=_("A wakes up and writes what it computed before the pause: "
                                  "stock 4"),
                         refused=_("A's fencing token is older than B's"))


# --- small helpers ---------------------------------------------------------------------------

def server_client(server) -> redis.Redis:
    return redis.Redis(port=server.port)


@dataclass(frozen=True)
class Release:
    """What a late release did, said in the reader's language."""

    refused: bool
    said: str


def release_outcome(lock) -> Release:
    try:
        lock.release()
        return Release(False, _("released"))
    except LockLost as error:
        return Release(True, _("was refused (%(reason)s)", reason=say_reason(error.reason)))



def attempt(lock) -> str:
    try:
        return "acquired" if lock.acquire() else "refused"
    except Exception as error:  # noqa: BLE001 - what happened is the observation
        return named(error)


def wait_for(condition, what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the lab waited {seconds:g} s for {what}")
        time.sleep(0.01)

LABS = (
    Lab("C09", "redis_setnx", N_("SETNX with no expiry: a killed holder blocks everyone; "
        "SET NX PX frees it after one lease"), ("A0", "A1"), ("redis", "instances"), 12,
        stage_setnx),
    Lab("C10", "redis_setnx_expire", N_("SETNX then EXPIRE: a crash between them leaves a lock "
        "with no expiry; one SET NX PX cannot"), ("A1", "A4"), ("redis", "instances"), 10,
        stage_setnx_expire),
    Lab("C11", "redis_plain_del", N_("A lease shorter than the work: a plain DEL frees the next "
        "holder's lock; a token-checked release refuses"), ("A0", "A2"), ("redis",), 2,
        stage_plain_del),
    Lab("C12", "redis_get_del", N_("GET, compare, then DEL has the same window; a Lua script "
        "closes it"), ("A0", "A2", "A4"), ("redis",), 2, stage_get_del),
    Lab("C15", "fencing", N_("A holder paused past its lease writes after another took the lock; "
        "a fencing token refuses the stale write"), ("A4",), ("redis",), 1, stage_fencing),
)
