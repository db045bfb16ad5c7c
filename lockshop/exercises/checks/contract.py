"""What every lock must do, whatever its backend: the checks every exercise runs.

Mutual exclusion among threads, a blocking acquire that gives up in time, a
try-lock that fails at once, and a release by someone who does not hold the
lock refused with the lock left in place.
"""

from __future__ import annotations

import threading
import time

from locks import LockNotOwned
from lockshop.exercises.grading import Background, Check, Grading
from shop.i18n import _, lazy_gettext

THREADS, ROUNDS = 6, 4
#: The business step's delay: long enough that two sections at once lose an update.
SECTION_SECONDS = 0.01


def mutual_exclusion(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("counter")
    factory = grading.factory(lease_ms=5000)
    counter = {"value": 0}
    start = threading.Barrier(THREADS)

    def worker() -> None:
        start.wait()
        for _round in range(ROUNDS):
            lock = factory.lock(name, timeout=20)
            if not lock.acquire():
                raise TimeoutError("an acquire gave up after 20 s")
            value = counter["value"]  # read, wait, write: the shop's read-check-write
            time.sleep(SECTION_SECONDS)
            counter["value"] = value + 1
            lock.release()

    workers = [Background(worker) for _thread in range(THREADS)]
    # The first error of any, raised as soon as it is raised: a release that raises (a
    # TODO) leaves its key, and the threads waiting behind it would time out first.
    grading.until(lambda: all(job.done() for job in workers)
                  or any(job.failed() for job in workers), seconds=60)
    for job in sorted(workers, key=lambda job: not job.failed()):
        job.result(0)
    wanted = THREADS * ROUNDS
    return _("the counter reads %(value)s", value=counter["value"]), counter["value"] == wanted


def gives_up_in_time(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("timeout")
    factory = grading.factory(lease_ms=10_000)
    held_lock = grading.take(factory, name)
    if held_lock is None:
        return _("the lock could not be taken while free"), False

    def wait_then_try() -> tuple[bool, float, bool, float]:
        started = time.monotonic()
        waited = factory.lock(name, timeout=0.5).acquire()
        after_wait = time.monotonic() - started
        started = time.monotonic()
        tried = factory.lock(name).acquire(blocking=False)
        return waited, after_wait, tried, time.monotonic() - started

    waited, after_wait, tried, after_try = grading.in_thread(wait_then_try)
    grading.in_thread(held_lock.release)
    observed = _("acquire(timeout=0.5) returned %(waited)s after %(after_wait).2f s; "
                 "acquire(blocking=False) returned %(tried)s after %(after_try).2f s",
                 waited=waited, after_wait=after_wait, tried=tried, after_try=after_try)
    return observed, (not waited and 0.45 <= after_wait <= 2.0
                      and not tried and after_try < 0.5)


def non_owner_refused(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("owner")
    factory = grading.factory(lease_ms=10_000)
    held_lock = grading.take(factory, name)
    if held_lock is None:
        return _("the lock could not be taken while free"), False

    def release_what_i_never_took() -> str:
        try:
            factory.lock(name).release()
        except LockNotOwned:
            return True
        return False

    refused = grading.in_thread(release_what_i_never_took)
    still_held = grading.take(factory, name, blocking=False) is None
    grading.in_thread(held_lock.release)
    observed = _("the release was %(answer)s; the holder's lock is %(state)s",
                 answer=_("refused (LockNotOwned)") if refused else _("allowed"),
                 state=_("still held") if still_held else _("gone"))
    return observed, refused and still_held


CHECKS = (
    Check("C01", lazy_gettext("%(threads)s threads each add one to a counter %(rounds)s times, "
                              "inside your lock (read, wait 10 ms, write)",
                              threads=THREADS, rounds=ROUNDS),
          lazy_gettext("no update lost: the counter reads %(total)s", total=THREADS * ROUNDS),
          lazy_gettext("Two threads were inside at once. _try_acquire must succeed for one "
                       "caller only: create the key only if it is absent, in one command (SET "
                       "... NX, or SETNX), and return whether that worked."), mutual_exclusion),
    Check("C26", lazy_gettext("while another holds the lock: acquire(timeout=0.5), then "
                              "acquire(blocking=False)"),
          lazy_gettext("False after about 0.5 s, then False at once"),
          lazy_gettext("_try_acquire must make one attempt and return False when the lock is "
                       "taken; the base class does the waiting and the timeout. Do not loop or "
                       "sleep in it."), gives_up_in_time),
    Check("C11", lazy_gettext("someone who never took the lock calls release()"),
          lazy_gettext("refused with LockNotOwned, and the holder keeps its lock"),
          lazy_gettext("Let the base class refuse it: do not override release() or acquire(); "
                       "fill in _release only."), non_owner_refused),
)
