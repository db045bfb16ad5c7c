"""Quartz's lock row (lesson C41), on a student's job guard (exercise 22), on MariaDB.

Three schedulers (three shop states in the grader's process, each with its own
connections to the grading's database) reach one fire time at once, past a
barrier. Each guard's ``take()`` reads whether the fire time has run, then is
held ``DECIDING_MS`` in ``deciding()`` before it writes its claim (the grader
sets ``deciding_s`` on a subclass of the student's guard): far longer than the
barrier's spread, so that without a row lock all three have read "not run"
before any writes, and all three run. With ``SELECT ... FOR UPDATE`` on
the job's row, the second and the third wait at their read for the first's
commit, then read its fire time and skip.

Then the shop's own jobs, on three instances on that database, with the guard
plugged in as the shop would run it (deciding at once): ``job_steps``' cluster
run, which exercise 15 reads too. Held there too, a decision would start its run
past half the interval, and the scheduler would skip it as too late.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from sqlalchemy import delete

from lockshop.exercises.checks import job_steps
from lockshop.exercises.checks.job_steps import JOB, JobRun, close_states, shop_states
from lockshop.exercises.grading import Check, Grading
from lockshop.exercises.remote_guards import student_guards
from shop.i18n import _, lazy_gettext
from shop.store.models import JobLock, utc_at

SCHEDULERS = 3
#: Each guard's time between its read and its write (its ``deciding()``).
DECIDING_MS = 300


def schedulers_at_once(grading: Grading) -> tuple[str, bool]:
    states = shop_states(grading, (job_steps.LONG_LEASE_MS,) * SCHEDULERS)
    try:
        # The student's guard, held DECIDING_MS in its deciding(): the shop's decides at
        # once. (Graded out of process, in the student's process: ``remote_guards``.)
        with student_guards(grading, deciding_s=DECIDING_MS / 1000) as held:
            return _one_runs_it(grading, states, held)
    finally:
        close_states(*states)


def _one_runs_it(grading: Grading, states: list, held) -> tuple[str, bool]:
    settings = states[0].settings()
    fire_time = int(time.time())  # whole seconds: the next fire time is one later
    at_once = threading.Barrier(SCHEDULERS)
    runs = [JobRun(grading, state, utc_at(fire_time), settings, start=at_once,
                   guard_class=held) for state in states]
    for run in runs:
        run.ended.wait(30)
    raised = [run.said() for run in runs if isinstance(run.outcome, BaseException)]
    if raised:  # (a TODO raises, to be said in the skeleton's own words)
        return raised[0], False
    took = [run.outcome != "skipped" for run in runs]
    later = JobRun(grading, states[1], utc_at(fire_time + 1), settings, guard_class=held)
    later.ended.wait(30)
    if isinstance(later.outcome, BaseException):
        return later.said(), False
    took_later = later.outcome != "skipped"
    with states[0].engine.begin() as db:  # the cluster's fire times start afresh
        db.execute(delete(JobLock).where(JobLock.job == JOB))
    yes, no = _("yes"), _("no")
    observed = _("ran the fire time: %(ran)s; the next fire time's run: %(later)s",
                 ran=", ".join(f"{name} {yes if ran else no}"
                               for name, ran in zip("ABC", took, strict=True)),
                 later=yes if took_later else no)
    return observed, sum(took) == 1 and took_later


HINT = lazy_gettext(
    "Take the job's row with SELECT ... FOR UPDATE (through its primary key, job) before "
    "you read whether this fire time has run, and write your claim in that same "
    "transaction: the other schedulers' SELECT then waits for your commit, reads your fire "
    "time, and skips. A row lock lasts as long as its transaction: a claim written in a "
    "second one comes after the lock is gone.")

ROW_LOCK = (
    Check("C41",
          lazy_gettext("%(schedulers)s schedulers reach one fire time at once, %(delay)s ms "
                       "between your guard's read and its write; then the next fire time",
                       schedulers=SCHEDULERS, delay=DECIDING_MS),
          lazy_gettext("one of them runs it and the others skip; the next fire time runs"),
          HINT, schedulers_at_once),
    # The shop's jobs on three instances: exercise 15's cluster checks, said of a row lock.
    *(replace(check, hint=HINT) for check in job_steps.ONCE if check.sale),
)
