"""Exercise 10: a queued Redis lock against polling (C34), and a waiter that gives up (C38).

Every waiter here runs on a client of its own that counts what it sends
(``lockshop.cluster.wire.WatchedRedis``): the grader learns that a waiter
has asked, and how often it asks while it waits, from the commands it sees,
never from the student's code. A waiter that is told sleeps in the server (``BLPOP`` on a
list of its own): those commands are counted apart.
"""

from __future__ import annotations

import threading
import time

from lockshop.exercises.grading import Background, Check, Grading
from shop.i18n import _, lazy_gettext

#: A lease far longer than any check: nobody gets in because a lease ran out.
LONG_LEASE_MS = 10_000
#: How long the waiter waits while the grader counts what it sends.
COUNTED_SECONDS = 3.0
#: The most a waiter may ask per second while it waits (a heartbeat, not a poll).
ASKS_PER_SECOND = 10
#: How long the grader waits for the waiter's next blocking wait, to release during it.
NEXT_WAIT_SECONDS = 2.0
WAITERS = 6
#: How long each waiter of the arrival-order check holds the lock.
HOLD_SECONDS = 0.05


def _waiter_factory(grading: Grading, name: str):
    """A factory of the student's locks on a client of its own that counts its commands
    (from nought: the grader's own PING, asking whether the server is up, is not the
    waiter's)."""
    factory = grading.factory(lease_ms=LONG_LEASE_MS, watched_key=grading.key_of(name))
    factory.client.sent = factory.client.blocking = 0
    return factory


def _has_asked(factory) -> bool:
    """The waiter has sent a command and had it answered: it has asked once at least."""
    return factory.client.sent > 0


def _wait_and_hold(factory, name: str, timeout: float, hold: float = 0.0) -> float | None:
    """Acquire (waiting up to ``timeout``), hold ``hold`` s, release: when it got the lock
    (time.monotonic()), or None if it gave up."""
    lock = factory.lock(name, timeout=timeout)
    if not lock.acquire():
        return None
    got = time.monotonic()
    time.sleep(hold)
    lock.release()
    return got


def woken_not_polling(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("woken")
    a = grading.take(grading.factory(lease_ms=LONG_LEASE_MS), name)
    if a is None:
        return _("A could not take the free lock"), False
    factory = _waiter_factory(grading, name)
    waiting = Background(_wait_and_hold, factory, name, 20.0)
    if not grading.until(lambda: _has_asked(factory) or waiting.done(), seconds=5):
        return _("the waiter sent nothing in 5 s"), False
    if waiting.done():
        return _("the waiter got the lock while A held it"), False
    sent, blocking = factory.client.sent, factory.client.blocking
    time.sleep(COUNTED_SECONDS)
    asked = (factory.client.sent - sent) - (factory.client.blocking - blocking)
    slept = factory.client.blocking - blocking
    counted = _("in %(seconds)s s of waiting it sent %(asked)s requests and %(slept)s "
                "blocking waits", seconds=f"{COUNTED_SECONDS:g}", asked=asked, slept=slept)
    # A releases as the waiter is about to start a blocking wait, so the whole wait lies
    # after the release: a waiter that is told ends it at once with a wake-up, one that is
    # not sits it out to its timeout. No luck in when the release lands.
    woken = factory.client.woken
    release: list = []  # (when, A's release in a thread of its own), once
    once = threading.Lock()

    def release_once() -> None:
        with once:
            if not release:
                release.append((time.monotonic(), Background(a.release)))
        release[0][1].join()

    factory.client.before_blocking = release_once
    grading.until(lambda: release, seconds=NEXT_WAIT_SECONDS)
    factory.client.before_blocking = None
    if not release:
        # No new blocking wait: either one long one, begun before, or none at all.
        in_a_wait = factory.client.in_blocking_wait
        release_once()
        if not in_a_wait:
            waiting.result(25)
            return _("%(counted)s; then it began no blocking wait in %(seconds)s s: it asks "
                     "again by itself", counted=counted,
                     seconds=f"{NEXT_WAIT_SECONDS:g}"), False
    released, releasing = release[0]
    releasing.result()  # A's own release: its error is the check's
    got = waiting.result(25)
    if got is None:
        return _("the waiter never got the lock after A's release"), False
    told = factory.client.woken > woken
    observed = _("%(counted)s; after A's release, its blocking wait %(ended)s; it held the "
                 "lock %(ms)s ms after A's release", counted=counted,
                 ended=_("ended with a wake-up") if told else _("ran to its timeout"),
                 ms=f"{(got - released) * 1000:.0f}")
    return observed, asked <= ASKS_PER_SECOND * COUNTED_SECONDS and told


def arrival_order(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("order")
    a = grading.take(grading.factory(lease_ms=LONG_LEASE_MS), name)
    if a is None:
        return _("A could not take the free lock"), False
    order: list[int] = []
    guard = threading.Lock()

    def waiter(number: int, factory) -> None:
        if _wait_and_hold(factory, name, 30.0, HOLD_SECONDS) is not None:
            with guard:
                order.append(number)

    waiters = []
    for number in range(1, WAITERS + 1):
        factory = _waiter_factory(grading, name)
        waiters.append(Background(waiter, number, factory))
        # The next one arrives only once this one has asked (and so queued).
        grading.until(lambda f=factory: _has_asked(f), seconds=5)
        time.sleep(0.05)
    grading.in_thread(a.release)
    for job in waiters:
        job.result(40)
    wanted = list(range(1, WAITERS + 1))
    return _("%(waiters)s waiters arrived in the order %(wanted)s while A held the lock; they "
             "got it in the order %(order)s", waiters=WAITERS,
             wanted=" ".join(map(str, wanted)), order=" ".join(map(str, order)) or "-"), \
        order == wanted


def quitter_leaves(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("quitter")
    # A lease that outlasts the check by a little: a lock handed to the quitter, which is
    # gone, frees only when it runs out.
    a = grading.take(grading.factory(lease_ms=3000), name)
    if a is None:
        return _("A could not take the free lock"), False
    quitter_factory = _waiter_factory(grading, name)
    quitting = Background(_wait_and_hold, quitter_factory, name, 1.0)
    grading.until(lambda: _has_asked(quitter_factory), seconds=5)
    time.sleep(0.05)
    patient_factory = _waiter_factory(grading, name)
    patient = Background(_wait_and_hold, patient_factory, name, 20.0)
    grading.until(lambda: _has_asked(patient_factory), seconds=5)
    if quitting.result(10) is not None:
        return _("the first waiter got the lock while A held it"), False
    released = time.monotonic()  # at once: the quitter has just given up
    grading.in_thread(a.release)
    got = patient.result(25)
    if got is None:
        return _("the second waiter never got the lock after A's release: the first one, "
                 "which had given up, still headed the queue"), False
    return _("the first waiter gave up after 1 s; A released; the second waiter held the "
             "lock %(ms)s ms later", ms=f"{(got - released) * 1000:.0f}"), got - released <= 1.0


QUEUE = (
    Check("C34", lazy_gettext("A holds the lock; a waiter waits %(seconds)s s, the grader "
                              "counting what it sends; then A releases",
                              seconds=f"{COUNTED_SECONDS:g}"),
          lazy_gettext("the waiter sleeps until told: at most %(rate)s requests a second (a "
                       "blocking wait in the server does not count), and A's release ends "
                       "its blocking wait with a wake-up, not at its timeout",
                       rate=ASKS_PER_SECOND),
          lazy_gettext("Do not poll: on a refused attempt, queue (RPUSH your token on the "
                       "queue list, once) and wait with BLPOP on a wake list of your own "
                       "(self.wake), with a timeout of a few hundred ms as a fallback only. "
                       "Your release pushes a wake-up to the wake list of the waiter that "
                       "heads the queue, in the same Lua script as its delete."),
          woken_not_polling),
    Check("C34", lazy_gettext("A holds the lock; %(waiters)s waiters arrive one after another; "
                              "A releases, and each holds it %(ms)s ms in turn",
                              waiters=WAITERS, ms=f"{HOLD_SECONDS * 1000:.0f}"),
          lazy_gettext("they get the lock in the order they arrived: nobody waits longer than "
                       "the waiters ahead of it"),
          lazy_gettext("A free lock belongs to the waiter that heads the queue: in your acquire "
                       "script, take the lock only if it is free AND the queue is empty or "
                       "its head (LINDEX queue 0) is your token; leave the queue (LREM) when "
                       "you take it."), arrival_order),
    Check("C38", lazy_gettext("A holds the lock; a first waiter gives up after 1 s while a "
                              "second one waits behind it; A releases at once"),
          lazy_gettext("the second waiter gets the lock within a second: the first left the "
                       "queue when it gave up"),
          lazy_gettext("Write _gave_up(): a waiter that times out must take its token out of "
                       "the queue (LREM) and delete its wake list, or the lock is handed to, "
                       "or waits for, a waiter that is gone."), quitter_leaves),
)
