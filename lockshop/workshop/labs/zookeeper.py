"""Labs of ZooKeeper's sessions (A0, A1, A3, A4): two ticket offices and one
lock, ephemeral nodes that go with their session, a session that expires
under a paused holder, and an ensemble that loses its leader.

Each lock is opened on its own factory, hence its own ZooKeeper session, as
separate shop instances would be.
"""

from __future__ import annotations

import threading
import time

from locks import Backends
from lockshop.cluster.zookeeper_sessions import expire_session
from lockshop.workshop.staging import steps
from lockshop.cluster.holder import HELD, holder_process
from lockshop.workshop.staging.record import Lab
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
)
from shop.orders.order_strategies import Strategies
from shop.store.audit import take_audit
from shop.store.db import engine_of
from shop.store.models import ProductKind
from shop.store.products import ProductSpec
from shop.i18n import N_, _
from shop.i18n.lock_errors import named

#: The shortest session ZooKeeper allows here (tickTime 500 ms): the lock's lease.
SESSION_MS = 1000


# --- C02: two ticket offices, one seat ------------------------------------------------------

def stage_ticket_offices(run) -> None:
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "none", _("each office reads the free seats, takes the first, writes")),
            ("fix", "zk_fair", _("each office sells inside the fair ZooKeeper lock of the "
                                 "show"))):
        getattr(run, half)(strategy, how)
        seats = tuple(f"A{n}" for n in range(1, 7))
        sessions = run.shop_database(ProductSpec("show", "Show", ProductKind.TICKET,
                                                 seats=seats))
        strategy = run.version(strategy)
        strategies = Strategies(Backends(zk_hosts=zk.address), "sqlite")
        place = strategies.runner(strategy)
        context = OrderContext("lab", strategy, business_delay_ms=100, lock_timeout_ms=10_000)
        start = threading.Barrier(2)
        sold: list[str] = []

        def office() -> None:
            start.wait()
            sold.append(place(engine_of(sessions), OrderRequest(1), context).seat)

        offices = [threading.Thread(target=office) for _ in range(2)]
        for thread in offices:
            thread.start()
        for thread in offices:
            thread.join()
        strategies.close()
        audit = take_audit(sessions).products[0]
        observed = _("seats sold %(seats)s; free seats left %(left)s; double-booked "
                     "%(twice)s", seats=", ".join(sorted(sold)), left=audit.remaining,
                     twice=audit.double_booked_seats)
        action = _("two offices sell the show's next free seat at the same moment (6 free)")
        if half == "broken":
            run.check(action,
                      expected=_("both read 6 free and sell A1: one seat sold twice, 5 left"),
                      observed=observed,
                      agrees=sold == ["A1", "A1"] and audit.double_booked_seats == 1)
        else:
            run.check(action, expected=_("one after the other: A1, then A2; 4 left"),
                      observed=observed,
                      agrees=sorted(sold) == ["A1", "A2"] and audit.double_booked_seats == 0)


# --- C18: a holder that dies, and the node that goes with its session -----------------------

def stage_ephemeral(run) -> None:
    redis_server, = run.parts.redis()
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "redis_setnx", _("SETNX with no expiry: the key lives until someone "
                                        "deletes it")),
            ("fix", "zk_simple", _("an ephemeral node: it lives as long as its holder's "
                                   "session"))):
        getattr(run, half)(strategy, how)
        with holder_process(run.version(strategy), redis_url=redis_server.url,
                            zk_hosts=zk.address, lease_ms=SESSION_MS) as said:
            pass  # it holds the lock; leaving the block kills it
        run.check(_("a process takes the lock of product:1 and is killed (SIGKILL)"),
                  expected=_("it held the lock, and dies without releasing it"),
                  observed=_("it reported: %(said)s; then it was killed", said=steps.said(said)),
                  agrees=said == HELD)
        factory = run.open_locks(strategy, redis_url=redis_server.url, zk_hosts=zk.address,
                                 lease_ms=SESSION_MS)
        waiter = factory.lock("product:1", timeout=4)
        got, waited = steps.timed_acquire(waiter)
        action = _("another process asks for the lock, and waits up to 4 s")
        observed = steps.asked(got, waited, 1)
        if half == "broken":
            run.check(action, expected=_("refused: the dead holder's key never goes"),
                      observed=observed, agrees=not got)
        else:
            run.check(action, expected=_("granted once the dead session times out (%(ms)s ms "
                                         "and a tick or two)", ms=SESSION_MS),
                      observed=observed, agrees=got and waited < 4)
            waiter.release()


# --- C22: a session that expires under a paused holder, and the zxid that fences it ---------------

def stage_session_expiry(run) -> None:
    zk = run.parts.zookeeper()
    for half, how, fenced in (
            ("broken", _("the write trusts the holder's last check"), False),
            ("fix", _("the write carries the holder's fencing token: its node's creation "
                      "zxid"), True)):
        getattr(run, half)("zk_fair", how)
        sessions = run.shop_database(ProductSpec("x", "Lab item", ProductKind.ITEM, stock=5))
        a_factory = run.open_locks("zk_fair", zk_hosts=zk.address, lease_ms=4000)
        b_factory = run.open_locks("zk_fair", zk_hosts=zk.address, lease_ms=4000)
        a = a_factory.lock("product:1")
        a.acquire()
        a_read = steps.read(sessions)
        a.ensure_held()
        expire_session(a_factory.client, zk.address)
        queue = b_factory.client.get_children("/lockshop/fair/product:1")
        run.check(_("A reads stock %(read)s, checks it holds the lock, and is paused past its "
                    "session timeout", read=a_read),
                  expected=_("the server ends A's session, and its node with it"),
                  observed=_("nodes in the queue: %(nodes)s", nodes=len(queue)),
                  agrees=not queue)
        b = b_factory.lock("product:1", timeout=5)
        b.acquire()
        b_read = steps.read(sessions)
        steps.sell(sessions, b_read, b.fencing_token)
        b.release()
        run.check(_("B takes the lock and sells one unit"), expected=_("B writes stock 4"),
                  observed=_("B read %(read)s, wrote %(wrote)s", read=b_read, wrote=b_read - 1),
                  agrees=b_read == 5)
        steps.late_write(run, sessions, a_read, a.fencing_token if fenced else None,
                         action=_("A resumes and writes what it computed before: stock 4"),
                         refused=_("A's fencing token, its node's zxid, is older than B's"))


# --- C30: no single point of failure ------------------------------------------------------------

def stage_ensemble(run) -> None:
    run.broken(_("zk_fair on one ZooKeeper server"), _("the server is the lock service"))
    zk = run.parts.zookeeper()
    factory = run.open_locks("zk_fair", zk_hosts=zk.address)
    zk.stop()
    outcome = _outcome(factory.lock("product:1", timeout=2))
    run.check(_("the one ZooKeeper server stops; a buyer asks for the lock"),
              expected=_("no lock at all: backend unavailable (the shop answers 503)"),
              observed=steps.said(outcome), agrees=outcome.startswith("BackendUnavailable"))
    run.parts.zookeeper()  # back, for the labs after this one

    run.fix(_("zk_fair on an ensemble of three"),
            _("any majority of the servers serves the lock"))
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
    run.check(_("a buyer locks product:1; the ensemble's leader (%(leader)s) is killed; "
                "buyers keep asking, as a shop's clients retry a 503", leader=leader.name),
              expected=_("the two left elect a leader within seconds, and the lock goes on"),
              observed=_("before: %(before)s; after: %(after)s %(seconds)s s after the kill "
                         "(%(refusals)s refusals meanwhile)", before=steps.said(before),
                         after=steps.said(after), seconds=f"{took:.1f}", refusals=refusals),
              agrees=before == "acquired" and after == "acquired")


def _outcome(lock, release: bool = False) -> str:
    try:
        if not lock.acquire():
            return "refused"
    except Exception as error:  # noqa: BLE001 - what happened is the observation
        return named(error)
    if release:
        lock.release()
    return "acquired"


LABS = (
    Lab("C02", "ticket_offices", N_("Two ticket offices sell the same seat; a ZooKeeper lock "
        "sells it once"), ("A3",), ("zookeeper",), 2, stage_ticket_offices),
    Lab("C18", "zk_ephemeral", N_("A holder that dies: a SETNX key stays forever, a ZooKeeper "
        "ephemeral node goes with the session"), ("A0", "A1", "A3"), ("redis", "zookeeper"), 7,
        stage_ephemeral),
    Lab("C22", "session_expiry", N_("A ZooKeeper session that expires under a paused holder "
        "lets a second one in; the zxid as a fencing token fences the first"), ("A4",),
        ("zookeeper",), 2, stage_session_expiry),
    Lab("C30", "ensemble", N_("A ZooKeeper ensemble that loses its leader keeps locking: no "
        "single point of failure"), ("A0", "A1"), ("zookeeper",), 15, stage_ensemble),
)
