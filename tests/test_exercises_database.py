"""Exercises 17 and 18, the database locks of article A1, on real databases: the
references pass, the mutants fail on the lesson they break; a student's order step is
loaded from a file, and a file that gives none is one line.

Exercise 17 (a lock row with an expiry) is graded on a SQLite file of the grader's own;
exercise 18 (SELECT ... FOR UPDATE through a unique index) on a database of the grader's
own on this machine's MariaDB, created for the grading and dropped after it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from helpers import hosted_student, require, step_that_says_where_it_runs
from lockshop import exercises
from lockshop.cli.exercise import reference_lock
from lockshop.cluster.scratch import DEFAULT_SERVERS, server_error
from lockshop.exercises import grader
from lockshop.exercises.grading import Grading
from shop.orders.custom_steps import OrderStepError, load_order_step

pytestmark = pytest.mark.cluster

HERE = Path(__file__).parent / "exercise_locks"
MUTANTS = HERE / "mutants.py"
STEPS = HERE / "order_steps.py"

#: lock or step x exercise -> the first broken lesson the grader names (None: it passes).
TABLE = [
    ("17", "locks.table_lock:TableLock", None),  # the reference
    ("17", f"{HERE / 'lock_row.py'}:LockRow", None),  # the skeleton as a student fills it
    ("17", "locks.table_broken:NoExpiryTableLock", "C06"),
    ("17", f"{MUTANTS}:NameOnlyReleaseRow", "C11"),
    # It takes a live row over: the contract's threads see it first (C01); the kill's
    # check sees the next owner get in before the dead holder's lease ended.
    ("17", f"{MUTANTS}:TakesOverLiveRow", "C01"),
    ("18", "shop.orders.transactions:place_for_update", None),  # the reference
    ("18", f"{HERE / 'for_update_step.py'}:ForUpdateStep", None),
    ("18", f"{STEPS}:CommitsBeforeWrite", "C40"),
    ("18", f"{STEPS}:PlainRead", "C40"),
    ("18", f"{STEPS}:LooksUpByName", "C08"),
]

#: The lesson whose window the grader forces, for the ones that break an earlier one too.
MUST_FAIL = {f"{MUTANTS}:TakesOverLiveRow": "C06"}
#: Mutants graded with the sale too: the sale must fail them (oversold), not only the
#: check that names the lesson.
SALE_FAILS = {f"{STEPS}:PlainRead"}


def needs(exercise: exercises.Exercise) -> None:
    if exercise.backend == "mysql":
        error = server_error(DEFAULT_SERVERS["mysql"])
        require(error is None, f"MariaDB at {DEFAULT_SERVERS['mysql']} is not usable ({error})")


def cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lockshop.cli", "exercise", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_the_database_exercises_are_listed_with_their_lessons():
    assert exercises.find("17").lessons == ("C01", "C26", "C11", "C06", "C03")
    assert exercises.find("18").lessons == ("C40", "C08", "C01")
    assert exercises.find("for_update_step").backend == "mysql"
    printed = cli("list").stdout
    assert "lessons C40 C08 C01" in printed


@pytest.mark.parametrize(("number", "spec", "first_failed"), TABLE,
                         ids=[f"{n}-{spec.rpartition(':')[2]}" for n, spec, _ in TABLE])
def test_the_grader_names_the_first_lesson_a_database_lock_breaks(number, spec, first_failed):
    exercise = exercises.find(number)
    needs(exercise)
    sale = first_failed is None or spec in SALE_FAILS
    graded = grader.grade(exercise, spec, sale=sale)
    assert len(graded.results) == len(exercise.checks()) - (0 if sale else 1)
    report = "\n".join(line for r in graded.results for line in r.lines())
    assert graded.broken_lesson == first_failed, report
    failed = {r.lesson for r in graded.results if r.failed}
    if spec in MUST_FAIL:
        assert MUST_FAIL[spec] in failed, report
    if spec in SALE_FAILS:
        assert "C01" in failed and "oversold 0;" not in graded.results[-1].observed, report
    if graded.first_failed:
        first = graded.first_failed
        assert first.hint and first.lesson_title and first.articles, report
        wanted = next(c for c in exercise.checks() if str(c.action) == first.action)
        assert first.hint == str(wanted.hint), report


def test_the_references_are_what_check_reference_grades():
    """``exercise check N --reference``: 17's is the shop's table lock (its strategy's
    class), 18's the shop's own order step, named as a step is loaded."""
    assert reference_lock(exercises.find("17")) == "locks.table_lock:TableLock"
    assert reference_lock(exercises.find("18")) == "shop.orders.transactions:place_for_update"


def test_the_row_lock_checks_watch_innodb_not_a_clock():
    """C08's and C40's verdicts come from InnoDB's lock waits: a step that waits is seen
    waiting (the reference, same product) and one that does not is seen in its delay."""
    exercise = exercises.find("18")
    needs(exercise)
    graded = grader.grade(exercise, "shop.orders.transactions:place_for_update", sale=False)
    c40, c08 = graded.results
    assert "B waited for a row lock" in c40.observed and "1 orders, stock 0" in c40.observed
    assert "went on to its business delay" in c08.observed


def test_a_students_order_step_passes_from_the_command_line(tmp_path):
    needs(exercises.find("18"))
    results = tmp_path / "results.json"
    done = cli("check", "18", str(HERE / "for_update_step.py"), "--json", "--gradescope",
               str(results))
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["passed"] and record["lock"].endswith("for_update_step.py:ForUpdateStep")
    assert [r["lesson"] for r in record["rounds"][0]["results"]] == ["C40", "C08", "C01"]
    scored = json.loads(results.read_text())
    assert scored["score"] == scored["max_score"] == 3


def test_the_graders_database_is_dropped_after_grading(tmp_path):
    exercise = exercises.find("18")
    needs(exercise)
    step, spec = grader.resolve("shop.orders.transactions:place_for_update", exercise)
    admin = create_engine("mysql+pymysql://root@127.0.0.1:3306/")

    def exists(name: str) -> bool:
        with admin.connect() as db:
            return name in {row[0] for row in db.execute(text("SHOW DATABASES"))}
    try:
        with Grading(step, spec, exercise.backend, tmp_path) as grading:
            name = make_url(grading.database_url).database
            assert name.startswith("lockshop_grading_") and exists(name)
        assert not exists(name)
    finally:
        admin.dispose()


@pytest.mark.parametrize(("source", "said"), [
    ("from shop.orders.custom_steps import OrderStep\nclass A(OrderStep)\n    pass\n",
     "broken.py:2: syntax error"),
    ("x = 1\n", "broken.py: has no order step"),
    ("from shop.orders.custom_steps import OrderStep\nclass A(OrderStep): pass\n"
     "class B(OrderStep): pass\n", "has 2 order steps (A, B): name one"),
])
def test_a_file_that_gives_no_order_step_gets_one_line_and_exit_2(tmp_path, source, said):
    (tmp_path / "broken.py").write_text(source)
    done = cli("check", "18", "broken.py", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert said in done.stderr


def test_an_order_step_loads_from_a_file_or_a_function(tmp_path):
    assert load_order_step(f"{HERE / 'for_update_step.py'}").__class__.__name__ \
        == "ForUpdateStep"
    assert load_order_step("shop.orders.transactions:place_atomic").function.__name__ \
        == "place_atomic"
    with pytest.raises(OrderStepError, match="has no NoSuch"):
        load_order_step(f"{HERE / 'for_update_step.py'}:NoSuch")
    with pytest.raises(OrderStepError, match="neither an order step"):
        load_order_step("shop.orders.transactions:OPTIMISTIC_MAX_ATTEMPTS")


def test_a_lock_table_is_graded_in_a_process_of_its_own(tmp_path):
    """Exercise 17 out of process: the student's file is loaded in the lock host, never in
    the grader, and what its lock did is read by the grader from the database: the row
    its acquire wrote, gone after its release."""
    from lockshop.exercises.checks.table_steps import _row

    exercise = exercises.find("17")
    assert grader.out_of_process(exercise)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    with hosted_student(tmp_path, exercise, "locks.table_lock", "TableLock") as (host, spec), \
            Grading(None, spec, exercise.backend, runtime, host=host) as grading:
        assert grading.database_url.startswith("sqlite:///")
        lock = grading.take(grading.factory(), "mine")
        assert lock is not None and _row(grading, "mine") is not None
        grading.in_thread(lock.release)
        assert _row(grading, "mine") is None


def test_an_order_step_is_graded_in_a_process_of_its_own(tmp_path):
    """Exercise 18 out of process: the student's file is loaded, and its step runs, in the
    step's host, never in the grader; the grader still stops its buyer A in its business
    delay (called back from that process) and sees B wait for A's row lock in InnoDB."""
    import os
    import sys

    exercise = exercises.find("18")
    needs(exercise)
    assert grader.out_of_process(exercise)
    student = step_that_says_where_it_runs(tmp_path, "place_for_update")
    graded = grader.grade(exercise, f"{student}:Mine", sale=False)
    c40, c08 = graded.results
    assert c40.passed and "B waited for a row lock" in c40.observed, c40.observed
    assert c08.passed, c08.observed
    loaded, placed = (int((tmp_path / name).read_text()) for name in ("loaded", "placed"))
    assert loaded == placed != os.getpid()
    assert not any(str(student) in str(getattr(module, "__file__", ""))
                   for module in list(sys.modules.values()))
