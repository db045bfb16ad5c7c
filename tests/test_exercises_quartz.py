"""Exercise 22, Quartz's lock row, on the machine's MariaDB: the reference and a student's
guard pass; a guard that reads without the row lock, one that lets the lock go before it
writes its claim, and one that claims without reading are each caught on lesson C41.

The race is forced, not hoped for: three schedulers pass a barrier together, and each
guard spends 300 ms deciding between its read and its write
(lockshop/exercises/checks/row_lock_jobs.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import hosted_student, require
from lockshop import exercises
from lockshop.cluster.scratch import DEFAULT_SERVERS, server_error
from lockshop.exercises import grader
from lockshop.exercises.registry import JOB_GUARD, MYSQL

pytestmark = [pytest.mark.cluster, pytest.mark.mysql]

HERE = Path(__file__).parent / "exercise_locks"
MISTAKES = HERE / "quartz_mistakes.py"

#: guard -> whether it is right (the rest fail on C41, whose check forces the race).
TABLE = [
    ("shop.jobs.guards:RowLockGuard", True),  # the reference
    (f"{HERE / 'quartz_guard.py'}:QuartzGuard", True),  # a student's solution
    # All three schedulers read "not run", and all three run the fire time.
    (f"{MISTAKES}:ReadsWithoutLock", False),
    (f"{MISTAKES}:ClaimsInAnotherTransaction", False),
    # Each takes its turn through the lock, and none looks: every one runs.
    (f"{MISTAKES}:ClaimsWithoutLooking", False),
]
#: The cluster's checks: the shop's schedulers, whose guards decide at once. A wrong guard
#: fails them when the instances' reads meet, which nothing there forces: C41's check does.
CLUSTER = {"C04", "C05", "C42"}


@pytest.fixture(autouse=True)
def _mariadb():
    error = server_error(DEFAULT_SERVERS["mysql"])
    require(error is None, f"MariaDB at {DEFAULT_SERVERS['mysql']} is not usable ({error})")


def test_exercise_22_practises_quartzs_lock_row_on_mariadb():
    exercise = exercises.find("22")
    assert (exercise.backend, exercise.writes) == (MYSQL, JOB_GUARD)
    assert exercise.lessons[0] == "C41" and {"C04", "C05"} <= set(exercise.lessons)


@pytest.mark.parametrize(("guard", "right"), TABLE,
                         ids=[g.rpartition(":")[2] for g, _ in TABLE])
def test_the_grader_names_the_lesson_a_quartz_guard_breaks(guard, right):
    exercise = exercises.find("22")
    graded = grader.grade(exercise, guard)
    report = "\n".join(line for r in graded.results for line in r.lines())
    assert len(graded.results) == len(exercise.checks()), report
    failed = {r.lesson for r in graded.results if r.failed}
    if right:
        assert graded.passed, report
        assert "ran the fire time: " in report and "the next fire time's run: yes" in report
        return
    assert "C41" in failed and failed <= {"C41", *CLUSTER}, report
    assert graded.broken_lesson == "C41", report
    first = graded.first_failed
    assert "FOR UPDATE" in first.hint and first.lesson_title and first.articles, report
    assert "TODO" not in report and "raised" not in report, report
    # Every scheduler ran the fire time that only one should have.
    assert first.observed.startswith("ran the fire time: A yes, B yes, C yes;"), report


def test_an_untouched_skeleton_says_its_todo_and_nothing_ran(tmp_path):
    done = subprocess.run([sys.executable, "-m", "lockshop.cli", "exercise", "start", "22",
                           str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, "-m", "lockshop.cli", "exercise", "check", "22",
                           "quartz_guard.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "LANGUAGE": "en"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not written yet: TODO 1: SELECT fire_time FROM job_locks" in done.stdout
    assert "Nothing ran" in done.stdout and "on a mysql database of the grader's own" in \
        done.stdout
    assert "exercise 22 not passed" in done.stdout


def test_a_quartz_guard_is_graded_in_a_process_of_its_own(tmp_path):
    """Exercise 22 out of process: the student's guard is loaded in the lock host, never in
    the grader, on the grading's database (the host is given its URL); its claim is read
    by the grader from the job's row itself, and a second scheduler's guard, deciding
    after it, skips."""
    import threading
    import time

    from sqlalchemy import select

    from lockshop.exercises.checks.job_steps import JOB, LONG_LEASE_MS, close_states, shop_states
    from lockshop.exercises.grading import Grading
    from lockshop.exercises.remote_guards import RemoteGuard, student_guards
    from shop.store.models import JobLock, utc_at

    exercise = exercises.find("22")
    assert grader.out_of_process(exercise)
    with hosted_student(tmp_path, exercise, "shop.jobs.guards", "RowLockGuard") as (
            host, spec), Grading(None, spec, exercise.backend, tmp_path / "runtime",
                                 host=host) as grading:
        a, b = shop_states(grading, (LONG_LEASE_MS, LONG_LEASE_MS))
        try:
            with student_guards(grading, deciding_s=0.05) as guards:
                settings, fire_time = a.settings(), utc_at(int(time.time()))
                mine = guards(a, JOB, fire_time, settings, time.time)
                assert isinstance(mine, RemoteGuard) and mine.take() is True
                with a.engine.connect() as db:
                    claim = db.execute(select(JobLock.fire_time, JobLock.instance)
                                       .where(JobLock.job == JOB)).one()
                assert tuple(claim) == (fire_time, "A")
                theirs: list = []
                other = threading.Thread(target=lambda: theirs.append(
                    guards(b, JOB, fire_time, settings, time.time).take()))
                other.start()
                other.join(30)
                assert theirs == [False]
                mine.ensure_held(None)
                mine.give_back()
        finally:
            close_states(a, b)
    assert not any("mine.py" in str(getattr(module, "__file__", ""))
                   for module in list(sys.modules.values()))
