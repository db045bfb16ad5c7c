"""Labs of how long a hold lasts (A1, A2, A4): a row or key with no expiry, a
lease too short or too long, and the watchdog that renews a short one.

A holder that "dies" is a process of its own, killed with SIGKILL: it
releases nothing and says goodbye to nobody, as in a crash.
"""

from __future__ import annotations

import threading
import time

from sqlalchemy import create_engine, text

from lockshop.workshop.staging import steps
from lockshop.cluster.holder import HELD, holder_process
from lockshop.workshop.staging.record import Lab
from shop.i18n import N_, _, yes_no


def _wait(factory, seconds: float) -> tuple[bool, float]:
    """Ask for product:1, waiting up to ``seconds``: (granted, seconds waited)."""
    lock = factory.lock("product:1", timeout=seconds)
    granted, waited = steps.timed_acquire(lock)
    if granted:
        lock.release()
    return granted, waited



# --- C06: a lock row with no expiry ---------------------------------------------------------

def stage_lock_row(run) -> None:
    for half, strategy, how in (
            ("broken", "table_no_expiry", _("insert a row with a unique key to lock, delete "
                                            "it to unlock")),
            ("fix", "table", _("the same row with an expiry column: a row past its lease is "
                               "taken over"))):
        getattr(run, half)(strategy, how)
        url = f"sqlite:///{run.parts.folder(run.lab.name) / 'locks.db'}"
        with holder_process(run.version(strategy), database_url=url, lease_ms=500) as said:
            pass  # leaving the block kills the holder
        run.check(_("a process inserts the lock row of product:1 and is killed (SIGKILL)"),
                  expected=_("it held the lock and dies before its delete"),
                  observed=_("it reported: %(said)s; then it was killed", said=steps.said(said)),
                  agrees=said == HELD)
        factory = run.open_locks(strategy, database_url=url, lease_ms=500)
        granted, waited = _wait(factory, 1.5)
        if half == "broken":
            run.check(_("another instance asks for the lock, waiting up to 1.5 s"),
                      expected=_("refused: the dead holder's row is there for good"),
                      observed=steps.asked(granted, waited, 1), agrees=not granted)
            engine = create_engine(url)
            with engine.begin() as db:
                db.execute(text("DELETE FROM lockshop_locks WHERE name = 'product:1'"))
            engine.dispose()
            granted, waited = _wait(factory, 1.5)
            run.check(_("a person deletes the row by hand; the instance asks again"),
                      expected=_("granted: only a person could free it"),
                      observed=_("acquired: %(got)s", got=yes_no(granted)),
                      agrees=granted)
        else:
            run.check(_("another instance asks for the lock, waiting up to 1.5 s"),
                      expected=_("granted once the row's 500 ms lease has run out"),
                      observed=steps.asked(granted, waited, 1),
                      agrees=granted and waited < 1.5)


# --- C14, C36: a lease that outlives a slow holder but not a dead one ---------------------------

def _slow_holder_and_newcomer(run, factory, work_s: float, ask_after_s: float) -> bool:
    """A holds product:1 for ``work_s``; B asks at ``ask_after_s``. Whether B got in."""
    holder = factory.lock("product:1")
    holder.acquire()
    try:
        time.sleep(ask_after_s)
        newcomer = factory.lock("product:1")
        got_in = newcomer.acquire(blocking=False)
        if got_in:
            newcomer.release()
        time.sleep(max(0.0, work_s - ask_after_s))
    finally:
        try:
            holder.release()
        except Exception:  # noqa: BLE001 - a lost lease is the lesson, not an error here
            pass
    return got_in


#: The watchdog's lease in C14 and C36, and the fixed lease it is compared with: 1 s, a
#: renewal every third of it. A renewal must come within two thirds of a lease of the
#: last: on a machine with every core busy a thread once waited over 200 ms for its
#: turn, which a 300 ms lease did not survive. Redisson's default is 30 s.
WATCHDOG_LEASE_MS = 1000
#: A works longer than one lease; B asks once the first lease has run out.
WORK_S, ASK_AFTER_S = 1.6, 1.3


def stage_watchdog(run) -> None:
    server, = run.parts.redis()
    for half, strategy, how in (
            ("broken", "redis", _("SET NX PX with a fixed 1 s lease")),
            ("fix", "redis_watchdog", _("the same lease, renewed every third of a second by "
                                        "a watchdog thread while the holder lives"))):
        getattr(run, half)(strategy, how)
        factory = run.open_locks(strategy, redis_url=server.url, lease_ms=WATCHDOG_LEASE_MS)
        got_in = _slow_holder_and_newcomer(run, factory, work_s=WORK_S,
                                           ask_after_s=ASK_AFTER_S)
        if half == "broken":
            run.check(_("A holds product:1 and works for 1.6 s; B asks after 1.3 s"),
                      expected=_("B gets in: A's lease ran out while A worked"),
                      observed=_("B got in: %(got_in)s", got_in=yes_no(got_in)),
                      agrees=got_in)
        else:
            run.check(_("A holds product:1 and works for 1.6 s; B asks after 1.3 s"),
                      expected=_("B is refused: the watchdog kept A's lease alive"),
                      observed=_("B got in: %(got_in)s", got_in=yes_no(got_in)),
                      agrees=not got_in)
        with holder_process(run.version(strategy), redis_url=server.url,
                            lease_ms=WATCHDOG_LEASE_MS) as said:
            pass  # killed on leaving the block: its watchdog dies with it
        granted, waited = _wait(factory, 4)
        run.check(_("a process holding the lock is killed (%(said)s); B asks, waiting up to "
                    "4 s", said=steps.said(said)),
                  expected=_("granted about one lease (1 s) after the death"),
                  observed=steps.asked(granted, waited, 2),
                  agrees=granted and waited < 2.0)


def stage_lease_length(run) -> None:
    server, = run.parts.redis()
    run.broken("redis", _("a fixed lease must be chosen once: short, or long"))
    short = run.open_locks("redis", redis_url=server.url, lease_ms=WATCHDOG_LEASE_MS)
    got_in = _slow_holder_and_newcomer(run, short, work_s=WORK_S, ask_after_s=ASK_AFTER_S)
    run.check(_("lease 1 s: A works for 1.6 s; B asks after 1.3 s"),
              expected=_("too short: B gets in while A still works"),
              observed=_("B got in: %(got_in)s", got_in=yes_no(got_in)),
              agrees=got_in)
    with holder_process("redis", redis_url=server.url, lease_ms=3000):
        pass
    long = run.open_locks("redis", redis_url=server.url, lease_ms=3000)
    granted, waited = _wait(long, 5)
    run.check(_("lease 3 s: the holder's process is killed; B asks, waiting up to 5 s"),
              expected=_("too long: B waits out the whole lease, about 3 s"),
              observed=steps.asked(granted, waited, 1),
              agrees=granted and waited >= 2.5)

    run.fix("redis_watchdog", _("a short lease (1 s), renewed while the holder lives"))
    renewed = run.open_locks("redis_watchdog", redis_url=server.url,
                             lease_ms=WATCHDOG_LEASE_MS)
    got_in = _slow_holder_and_newcomer(run, renewed, work_s=WORK_S, ask_after_s=ASK_AFTER_S)
    run.check(_("lease 1 s, renewed: A works for 1.6 s; B asks after 1.3 s"),
              expected=_("B is refused: a slow holder keeps its lock"),
              observed=_("B got in: %(got_in)s", got_in=yes_no(got_in)), agrees=not got_in)
    with holder_process("redis_watchdog", redis_url=server.url, lease_ms=WATCHDOG_LEASE_MS):
        pass
    granted, waited = _wait(renewed, 5)
    run.check(_("the holder's process is killed; B asks, waiting up to 5 s"),
              expected=_("a dead holder's lock frees after one short lease, about 1 s, not "
                         "the long lease's 3"),
              observed=steps.asked(granted, waited, 2),
              agrees=granted and waited < 2.0)


# --- C26: waiting for a lock, or not ----------------------------------------------------------

def stage_blocking(run) -> None:
    server, = run.parts.redis()
    factory = run.open_locks("redis", redis_url=server.url, lease_ms=5000)
    for half, how, blocking in (
            ("broken", _("try once: acquire(blocking=False)"), False),
            ("fix", _("wait, up to a timeout: acquire(timeout=1 s)"), True)):
        getattr(run, half)("redis", how)
        holder = factory.lock("product:1")
        holder.acquire()
        if blocking:
            threading.Timer(0.1, holder.release).start()  # a short critical section
        buyer = factory.lock("product:1", timeout=1.0)
        granted, waited = steps.timed_acquire(buyer, blocking=blocking)
        if granted:
            buyer.release()
        if half == "broken":
            # A lets go only once B has its answer: on a machine too busy to ask within
            # 100 ms, a release on a timer would have let B in. "At once" is well inside
            # the second a waiting acquire would spend (one try took 50 ms on a machine
            # running the suite with eight workers).
            time.sleep(0.1)
            holder.release()
            run.check(_("A holds the lock for 100 ms; B asks at once"),
                      expected=_("B is refused at once, though the lock frees 100 ms later"),
                      observed=steps.asked(granted, waited, 2),
                      agrees=not granted and waited < 0.5)
        else:
            run.check(_("A holds the lock for 100 ms; B asks at once"),
                      expected=_("B waits about 100 ms and gets it"),
                      observed=steps.asked(granted, waited, 2),
                      agrees=granted and 0.08 <= waited < 1.0)
            holder = factory.lock("product:1")
            holder.acquire()  # and this time it does not let go
            buyer = factory.lock("product:1", timeout=0.3)
            granted, waited = steps.timed_acquire(buyer)
            holder.release()
            run.check(_("A holds the lock for good; B asks, waiting up to 0.3 s"),
                      expected=_("B gives up when its timeout ends (the shop answers 503 "
                                 "with Retry-After)"),
                      observed=steps.asked(granted, waited, 2),
                      agrees=not granted and 0.3 <= waited < 1.0)


LABS = (
    Lab("C06", "table_no_expiry", N_("A lock row with no expiry: a crashed holder blocks "
        "everyone; an expiry column frees it"), ("A1",), (), 3, stage_lock_row),
    Lab("C14", "watchdog", N_("A watchdog renews the lease while the holder lives, and the lock "
        "frees one lease after it dies"), ("A4",), ("redis",), 6, stage_watchdog),
    Lab("C26", "blocking", N_("A try-lock fails at once; a blocking acquire waits, up to its "
        "timeout"), ("A0", "A1"), ("redis",), 1, stage_blocking),
    Lab("C36", "lease_length", N_("The lease trade-off: too short loses a slow holder's lock, "
        "too long keeps a dead holder's"), ("A2", "A4"), ("redis",), 9, stage_lease_length),
)
