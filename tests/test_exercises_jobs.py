"""Exercises 15 and 16, the job guards, on real servers: the references pass, the mutants
fail on the lesson they break, and the shop runs a guard plugged in from a file.

Exercise 15's cluster checks start three shop instances that fire the expiry and reminder
jobs together under the guard; exercise 16 holds a run in its business delay past its
lease while another instance takes over (lockshop/exercises/checks/job_steps.py).
"""

from __future__ import annotations

import re

import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import hosted_student, require
from locks.custom import LockClassError
from lockshop import exercises
from lockshop.cluster.redis_servers import redis_server_binary
from lockshop.exercises import grader
from lockshop.exercises.registry import JOB_GUARD, REDIS
from shop.app import create_app
from shop.config import Config, ConfigError
from shop.i18n import CHINESE, language
from shop.i18n.lock_errors import say_class_error
from shop.jobs.guards import JobGuard
from shop.jobs.custom import load_guard_class
from shop.jobs.scheduler import JobScheduler
from shop.store.models import utc_at

pytestmark = pytest.mark.cluster

GUARDS = Path(__file__).parent / "exercise_locks" / "job_guards.py"
REFERENCE = "shop.jobs.custom:StrategyLockGuard"

#: guard x exercise -> the lessons whose checks must fail (empty: it passes). The first
#: broken lesson is the first of them, in the order the checks run.
TABLE = [
    ("15", REFERENCE, ()),
    # Every instance runs every fire time: the stock comes back three times, every
    # customer is reminded three times.
    ("15", f"{GUARDS}:NoGuard", ("C04", "C05", "C42")),
    # The project's LockGuard on the strategy 'local': a lock per process. The quick
    # check's two shops share the grader's process (and its lock table), so only the
    # three instances show it.
    ("15", f"{GUARDS}:LocalLockGuard", ("C04", "C05", "C42")),
    # Held only while take() runs: every run then finds its lock gone before it writes.
    ("15", f"{GUARDS}:GivesBackAtOnce", ("C04", "C05", "C42")),
    ("16", REFERENCE, ()),
    ("16", f"{GUARDS}:RedisJobGuard", ()),  # a student's answer
    ("16", f"{GUARDS}:NoRecheck", ("C35",)),  # right for 15; writes after its lock is gone
]


def needs_redis() -> None:
    require(redis_server_binary() is not None, "the redis server is not installed")


@pytest.mark.parametrize(("number", "guard", "failing"), TABLE,
                         ids=[f"{n}-{g.rpartition(':')[2]}" for n, g, _ in TABLE])
def test_the_grader_names_the_lesson_a_guard_breaks(number, guard, failing):
    needs_redis()
    exercise = exercises.find(number)
    graded = grader.grade(exercise, guard)
    report = "\n".join(line for r in graded.results for line in r.lines())
    assert len(graded.results) == len(exercise.checks()), report
    failed = {r.lesson for r in graded.results if r.failed}
    if not failing:
        assert graded.passed, report
        return
    assert set(failing) <= failed, report
    assert failed <= set(failing) | {"C04"}, report  # nothing else is broken
    assert graded.broken_lesson in failing, report
    first = graded.first_failed
    assert first.hint and first.lesson_title and first.articles, report
    assert "TODO" not in report and "raised" not in report, report


def test_the_lessons_and_backend():
    assert exercises.find("15").lessons == ("C04", "C05", "C42")
    # 16 runs 15's checks too (one chain), and teaches C35 (as 4 runs 1-3's, and teaches C13).
    assert exercises.find("16").lessons == ("C35",)
    assert [c.lesson for c in exercises.find("16").checks()][:4] == ["C04", "C04", "C05", "C42"]
    assert {(exercises.find(n).backend, exercises.find(n).writes) for n in ("15", "16")} == {
        (REDIS, JOB_GUARD)}
    # No lock contract, no sale of locks: a guard is not a lock.
    assert all(check.lesson in ("C04", "C05", "C42", "C35")
               for check in exercises.find("16").checks())


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lockshop.cli", "exercise", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("source", "said"), [
    ("x = 1\n", "broken.py: has no job guard class (a subclass of JobGuard)"),
    ("from locks.redis_support import RedisLockBase\nclass A(RedisLockBase): pass\n",
     "broken.py: has no job guard class (a subclass of JobGuard)"),
    ("from shop.jobs.guards import JobGuard\nclass A(JobGuard): pass\n"
     "class B(JobGuard): pass\n", "has 2 job guard classes (A, B): name one"),
])
def test_a_file_that_gives_no_guard_gets_one_line_and_exit_2(tmp_path, source, said):
    (tmp_path / "broken.py").write_text(source)
    done = cli("check", "15", "broken.py", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_guard_class_the_file_lacks_is_named_with_those_it_has(tmp_path):
    """A guard's file is loaded as a lock's is: a class it lacks is named beside those it
    has, in the reader's language too."""
    (tmp_path / "guard.py").write_text("from shop.jobs.guards import JobGuard\n"
                                       "class Mine(JobGuard): pass\n")
    with pytest.raises(LockClassError) as refused:
        load_guard_class(f"{tmp_path / 'guard.py'}:Yours")
    assert str(refused.value).endswith("guard.py: has no class Yours (its job guard classes: "
                                       "Mine)")
    with language(CHINESE):
        assert say_class_error(refused.value).endswith("没有类 Yours（它的任务守卫类：Mine）")


def test_a_guard_is_refused_by_a_lock_exercise(tmp_path):
    done = cli("check", "3", str(GUARDS))
    assert done.returncode == 2 and "has no lock class" in done.stderr, done.stderr


# --- the shop's extension point ------------------------------------------------------------

COUNTING = '''
from shop.jobs.guards import JobGuard

TAKEN = []


class Counting(JobGuard):
    name = "counting"

    def __init__(self, state, job, fire_time, settings, clock):
        self.job, self.fire_time = job, fire_time

    def take(self):
        TAKEN.append((self.job, self.fire_time))
        return len(TAKEN) == 1  # the first run only
'''


def test_the_shop_runs_a_guard_plugged_in_from_a_file(tmp_path):
    (tmp_path / "counting.py").write_text(COUNTING)
    config = Config(database_url=f"sqlite:///{tmp_path / 'shop.db'}", job_interval_ms=0,
                    extra_guards=(f"counting={tmp_path / 'counting.py'}",))
    app = create_app(config)
    client, state = app.test_client(), app.extensions["lockshop"]
    answer = client.put("/api/admin/settings", json={"job_guard": "nobody"})
    assert answer.status_code == 422 and "counting" in answer.get_json()["known"]
    answer = client.put("/api/admin/settings", json={"job_guard": "counting",
                                                     "job_lock_at_least_ms": 0})
    assert answer.status_code == 200 and answer.get_json()["job_guard"] == "counting"
    # The interval is set for the fire below only: no scheduler runs in this process.
    settings = state.change_settings(job_interval_ms=1000)
    fire_time = utc_at(time.time())
    guard = JobGuard.for_settings(state, "send_reminders", fire_time, settings, time.time)
    assert type(guard).__name__ == "Counting" and guard.fire_time == fire_time
    scheduler = JobScheduler(state)
    outcomes = [scheduler.fire("send_reminders", fire_time, settings) for _ in range(2)]
    assert outcomes == ["done", "skipped"]  # its take() said True once
    assert len(sys.modules[type(guard).__module__].TAKEN) == 2
    runs = client.get("/api/admin/jobs").get_json()["runs"]
    assert [run["guard"] for run in runs] == ["counting"]


def test_a_job_guard_setting_must_name_a_guard_plugged_in():
    with pytest.raises(ConfigError, match="must be 'strategy' or 'leader', got 'mine'"):
        Config(job_guard="mine")
    with pytest.raises(ConfigError, match="or a name of LOCKSHOP_EXTRA_GUARDS, got 'yours'"):
        Config(job_guard="yours", extra_guards=("mine=x.py",))
    assert Config(job_guard="mine", extra_guards=("mine=x.py",)).job_guard == "mine"


def test_check_reference_names_the_projects_own_guard():
    from lockshop.cli.exercise import reference_lock
    assert reference_lock(exercises.find("15")) == reference_lock(exercises.find("16")) \
        == REFERENCE


def test_a_students_guard_is_graded_in_the_rooms_sandbox():
    """The room's way: the source alone, in the sandbox, whose shop instances load it."""
    import os

    from lockshop.room import sandbox
    from lockshop.room.sandboxed_grading import grade_in_sandbox
    needs_redis()
    require(os.geteuid() == 0, "the sandbox runs gradings as nobody: it needs root")
    require(not sandbox.missing_tools(), f"missing {sandbox.missing_tools()}")
    answer = GUARDS.read_text().split("class NoGuard")[0]  # RedisJobGuard, a student's
    answer = answer.replace("from dataclasses import replace\n", "").replace(
        "from shop.jobs.custom import StrategyLockGuard\n", "")
    outcome = grade_in_sandbox("16", answer, "en")
    assert outcome.passed is True, outcome
    # The command line's line, less its time (the room says it as the command line does).
    assert re.sub(r" \([\d.]+ s\)$", "", outcome.message) == \
        "exercise 16 passed: 5 of 5 checks", outcome


def test_a_job_guard_is_graded_in_a_process_of_its_own(tmp_path):
    """Exercises 15 and 16 out of process: the student's guard class is loaded in the lock
    host, never in the grader, and made there by the grader's runs as the scheduler makes
    one. What it holds the grader reads on its own Redis: taken by one run, refused to
    another; checked before a write (LockLost once the grader has deleted its key); given
    back. Its state's database is a file of the guard's own: the grader's, whose rows the
    checks count, never sees the guard's writes (its fencing token)."""
    needs_redis()
    from sqlalchemy import func, select

    from locks import LockLost
    from lockshop.exercises.checks.job_steps import JOB, LONG_LEASE_MS, close_states, shop_states
    from lockshop.exercises.grading import Grading
    from lockshop.exercises.remote_guards import RemoteGuard, student_guards
    from shop.store.models import JobFence

    assert all(grader.out_of_process(exercises.find(n)) for n in ("15", "16", "22"))
    exercise = exercises.find("16")
    with hosted_student(tmp_path, exercise, "shop.jobs.custom", "StrategyLockGuard") as (
            host, spec), Grading(None, spec, exercise.backend, tmp_path / "runtime",
                                 host=host) as grading:
        a, b = shop_states(grading, (LONG_LEASE_MS, LONG_LEASE_MS))
        try:
            with student_guards(grading) as guards:
                settings, fire_time = a.settings(), utc_at(time.time())

                def tried(state, at) -> bool:  # another run: a thread (an owner) of its own
                    return guards(state, JOB, at, settings, time.time).take()

                mine = guards(a, JOB, fire_time, settings, time.time)
                assert isinstance(mine, RemoteGuard) and mine.take() is True
                key = grading.key_of(f"job:{JOB}")
                assert grading.redis().exists(key)
                assert grading.in_thread(tried, b, fire_time) is False
                mine.ensure_held(None)
                grading.redis().delete(key)
                with pytest.raises(LockLost):
                    mine.ensure_held(None)
                mine.give_back()  # a lost lock has nothing to give back: no error
                assert grading.in_thread(tried, b, utc_at(time.time() + 1)) is True
            with a.engine.connect() as db:
                assert db.scalar(select(func.count()).select_from(JobFence)) == 0
        finally:
            close_states(a, b)
    assert not any("mine.py" in str(getattr(module, "__file__", ""))
                   for module in list(sys.modules.values()))
