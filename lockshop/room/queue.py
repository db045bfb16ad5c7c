"""The line of checks: at most N gradings at once, students served in the order they came.

A check asked for waits in the store (``queued``) until a worker takes it; the
store decides whose turn it is (the lowest place in line), so the order is the
same after a restart. Each student has at most one check waiting: a newer one
replaces it, the older one failing with "replaced by a newer check", and the
newer takes the older's place in line. A worker grades with the function it was
given, stores each check as it completes (the student's browser shows it at
once) and then the verdict.

On start-up the line is picked up where it was: checks that were waiting run, in
their old order; a check that was running when the room stopped is marked failed,
"interrupted, check again" (the grading's servers and sandbox went with it).

Failure: a grading function that raises fails that submission with what it
raised, and the worker goes on to the next.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Protocol

from lockshop.room.store import Store, Student, Submission
from shop.i18n import N_, gettext, language

log = logging.getLogger(__name__)

REPLACED = N_("replaced by a newer check")
INTERRUPTED = N_("interrupted, check again")


class Outcome(Protocol):
    passed: bool | None
    checks: list[dict]
    message: str


#: ``grade(exercise_id, source, language, on_check=...)``: runs one grading, calls
#: ``on_check`` with each check's dict as it completes, returns an ``Outcome``.
GradingFunction = Callable[..., Outcome]


def worker_count(asked: int | None) -> int:
    """How many gradings run at once: ``asked``, else one more than the cores. A grading
    mostly waits (on its servers, its leases, the grader's pauses): on two cores one takes
    about 5 s of CPU in 15 s, and thirty of them finished soonest three at a time
    (scripts/room_bench.py: 145 s to the last verdict, against 237 s two at a time and
    166 s four at a time)."""
    if asked is None:
        return (os.cpu_count() or 1) + 1
    if asked < 1:
        raise ValueError(gettext("the room needs at least one grading at a time, not "
                                 "%(count)s", count=asked))
    return asked


def said_in(message: str) -> Callable[[str], str]:
    """``message`` translated into a given language (a submission's, not the request's)."""
    def say(tag: str) -> str:
        with language(tag):
            return gettext(message)
    return say


class GradingQueue:
    """Workers that take the store's waiting submissions, one grading each at a time."""

    def __init__(self, store: Store, grade: GradingFunction, workers: int | None = None) -> None:
        self.store, self._grade = store, grade
        self.workers = worker_count(workers)
        self._wake = threading.Condition()
        self._arrivals = 0  # counts submits, so a worker never sleeps through one
        self._stopping = False
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Mark what a stop interrupted, then serve the line as it was left."""
        interrupted = self.store.interrupt_running(said_in(INTERRUPTED))
        if interrupted:
            log.info("%s gradings were running when the room stopped: marked interrupted",
                     interrupted)
        for number in range(self.workers):
            thread = threading.Thread(target=self._serve, name=f"room grader {number + 1}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def submit(self, student: Student, exercise: str, source: str, tag: str) -> str:
        """Put a check in line (replacing the student's waiting one); its id."""
        submission_id, _replaced = self.store.submit(student, exercise, source, tag,
                                                     said_in(REPLACED))
        with self._wake:
            self._arrivals += 1
            self._wake.notify()
        return submission_id

    def close(self, timeout: float = 5.0) -> None:
        """Stop taking checks. A grading still running after ``timeout`` is left to end
        on its own; what it would store is dropped, and the next start marks it
        interrupted."""
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        for thread in self._threads:
            thread.join(timeout)

    def _serve(self) -> None:
        while True:
            with self._wake:
                if self._stopping:
                    return
                seen = self._arrivals
            try:
                submission = self.store.take_next()
            except sqlite3.Error:
                log.exception("the room's store could not give the next check")
                submission = None
            if submission is not None:
                self._run(submission)
                continue
            with self._wake:
                self._wake.wait_for(lambda: self._stopping or self._arrivals != seen)

    def _run(self, submission: Submission) -> None:
        def on_check(check: dict) -> None:
            if not self._stopping:
                self.store.add_check(submission.id, check)

        try:
            with language(submission.language):
                outcome: Any = self._grade(submission.exercise, submission.source,
                                           submission.language, on_check=on_check)
            passed, message, checks = outcome.passed, outcome.message, outcome.checks
        except Exception as error:  # noqa: BLE001 - one broken grading must not stop the line
            log.exception("grading %s failed", submission.id)
            with language(submission.language):
                passed, checks = None, None
                message = gettext("the grader failed: %(error)s",
                                  error=f"{type(error).__name__}: {error}")
        if self._stopping:
            return  # the store may be closed; the next start marks it interrupted
        try:
            self.store.finish(submission.id, passed, str(message or ""), checks or None)
        except sqlite3.Error:
            log.exception("could not store the verdict of %s", submission.id)
