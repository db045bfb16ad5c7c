"""Exercises 19 to 21, the order steps that need no lock (C07, C25, C44), on real parts:
the references pass, the students' solutions pass, every mutant fails on the lesson it
breaks, and the untouched skeletons fail cleanly with their TODOs.

Each grade runs the student's step on SQLite files of the grader's own, its buyers held
together in the business delay, and the slow check (three shop instances) where the row
is about it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers import step_that_says_where_it_runs
from lockshop import exercises
from lockshop.exercises import grader
from lockshop.exercises.registry import ORDER_STEP

pytestmark = pytest.mark.cluster

HERE = Path(__file__).parent / "exercise_locks"
MUTANTS = HERE / "lockfree_mutants.py"

#: step x exercise -> the lesson the grader names (None: it passes), and whether to run
#: the slow check (the shop instances): always for what must pass.
TABLE = [
    ("19", "shop.orders.transactions:place_optimistic", None),
    ("19", f"{HERE / 'optimistic_order.py'}", None),
    ("19", f"{MUTANTS}:read_check_write", "C07"),  # the none strategy's path
    ("19", f"{MUTANTS}:version_unchecked", "C07"),
    ("19", f"{MUTANTS}:conflict_refused", "C07"),
    ("19", f"{MUTANTS}:stale_retry", "C07"),
    ("19", f"{MUTANTS}:version_not_bumped", "C07"),
    ("20", "shop.orders.transactions:place_atomic", None),
    ("20", f"{HERE / 'atomic_order.py'}", None),
    ("20", f"{MUTANTS}:read_check_write", "C25"),
    ("20", f"{MUTANTS}:unconditional_update", "C25"),
    ("20", f"{MUTANTS}:blind_seat_claim", "C25"),
    ("21", "lockshop.exercises.order_references:place_atomic_once", None),
    ("21", f"{HERE / 'idempotent_order.py'}", None),
    ("21", f"{MUTANTS}:without_key", "C44"),
    ("21", f"{MUTANTS}:key_after_commit", "C44"),
    ("21", f"{MUTANTS}:raises_on_conflict", "C44"),
    ("21", f"{MUTANTS}:no_lookup", "C44"),
]

#: The check each mutant must fail (its index in the exercise's checks): the window its
#: mistake leaves open, forced every time.
MUST_FAIL = {"version_unchecked": 0, "conflict_refused": 0, "stale_retry": 0,
             "version_not_bumped": 0,
             "unconditional_update": 0, "blind_seat_claim": 1, "without_key": 0,
             "key_after_commit": 1, "raises_on_conflict": 1, "no_lookup": 0}


def cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lockshop.cli", "exercise", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_the_three_are_order_steps_with_their_lessons():
    lessons = {number: exercises.find(number).lessons for number in ("19", "20", "21")}
    assert lessons == {"19": ("C07",), "20": ("C25",), "21": ("C44",)}
    for number in lessons:
        exercise = exercises.find(number)
        assert exercise.writes == ORDER_STEP and exercise.backend == "sqlite"
        # Its own checks only (no lock contract), the slow one last.
        assert exercise.checks() == exercise.own_checks and exercise.checks()[-1].sale
    assert "lessons C44" in cli("list").stdout


@pytest.mark.parametrize(("number", "step", "lesson"), TABLE,
                         ids=[f"{n}-{s.rpartition('/')[2]}" for n, s, _ in TABLE])
def test_the_grader_names_the_lesson_a_step_breaks(number, step, lesson):
    exercise = exercises.find(number)
    sale = lesson is None
    graded = grader.grade(exercise, step, sale=sale)
    report = "\n".join(line for r in graded.results for line in r.lines())
    assert len(graded.results) == len(exercise.checks()) - (0 if sale else 1), report
    assert graded.broken_lesson == lesson, report
    name = step.rpartition(":")[2]
    if name in MUST_FAIL:
        assert graded.results[MUST_FAIL[name]].failed, report
    for result in graded.results:
        if result.failed:
            assert result.hint and result.lesson_title, report
            assert result.todo is None, report  # a mistake, not a TODO left


def test_a_step_without_the_key_buys_twice_in_the_shop():
    """The shop's own check (three instances, a lost answer, retries on other instances)
    fails an order without the key: the audit counts two orders for one buyer."""
    graded = grader.grade(exercises.find("21"), f"{MUTANTS}:without_key")
    shop_check = graded.results[-1]
    assert shop_check.lesson == "C44" and shop_check.failed, shop_check.observed
    assert "retries answered 201, 409" in shop_check.observed, shop_check.observed


def test_the_sale_catches_the_none_path_across_instances():
    """The read-check-write with no guard, sold in three shop instances: oversold."""
    graded = grader.grade(exercises.find("20"), f"{MUTANTS}:read_check_write")
    sale = graded.results[-1]
    assert sale.lesson == "C25" and sale.failed, sale.observed


@pytest.mark.parametrize("number", ["19", "20", "21"])
def test_an_untouched_skeleton_fails_cleanly_with_its_todos(tmp_path, number):
    exercise = exercises.find(number)
    started = cli("start", number, str(tmp_path))
    assert started.returncode == 0 and str(tmp_path / exercise.file) in started.stdout
    done = cli("check", number, exercise.file, cwd=tmp_path)
    out, err = done.stdout, done.stderr
    assert done.returncode == 1, out + err
    assert "Traceback" not in out + err
    assert "TODO left (line" in out and "not written yet: TODO" in out, out
    assert "not run: " in out  # the shop's check waits for the TODOs
    assert f"exercise {number} not passed" in out and "Nothing ran" in out, out


def test_the_chinese_skeleton_is_written_in_chinese(tmp_path):
    done = subprocess.run([sys.executable, "-m", "lockshop.cli", "--lang", "zh", "exercise",
                           "start", "21", str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "一个键，一张订单" in (tmp_path / "idempotent_order.py").read_text()


def test_a_file_with_no_step_gets_one_line_and_exit_2(tmp_path):
    (tmp_path / "empty.py").write_text("x = 1\n")
    done = cli("check", "19", "empty.py", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert len(done.stderr.strip().splitlines()) == 1
    assert "has no order step" in done.stderr


def test_a_students_step_is_graded_in_the_rooms_sandbox():
    """The room's path: the source alone, in the sandbox, with the shop's instances inside.
    The solution passes; the same file that forgets to write its key fails on C44."""
    import os

    from helpers import require
    from lockshop.room import sandbox
    from lockshop.room.sandboxed_grading import grade_in_sandbox
    require(os.geteuid() == 0, "the sandbox runs gradings as nobody: it needs root")
    require(not sandbox.missing_tools(), f"missing {sandbox.missing_tools()}")
    source = (HERE / "idempotent_order.py").read_text()
    passed = grade_in_sandbox("21", source, "en")
    assert passed.passed, passed.message
    insert = "        db.execute(insert(OrderKey).values("
    assert insert in source
    forgetful = source.replace(insert, "        return None  # forgot the key\n" + insert)
    failed = grade_in_sandbox("21", forgetful, "en")
    assert failed.passed is False and "C44" in failed.message, failed.message
    assert [c["passed"] for c in failed.checks] == [False, False, False], failed.checks


def test_a_students_step_runs_in_a_process_of_its_own(tmp_path):
    """Exercise 20 out of process: the student's file is loaded and its step runs in the
    step's host, never in the grader, and the checks still hold its buyers together in
    their business delay (the grader's barrier, called back from that process)."""
    import os

    exercise = exercises.find("20")
    assert grader.out_of_process(exercise)
    student = step_that_says_where_it_runs(tmp_path, "place_atomic")
    graded = grader.grade(exercise, f"{student}:Mine", sale=False)
    report = "\n".join(line for r in graded.results for line in r.lines())
    assert graded.broken_lesson is None and len(graded.results) == 2, report
    loaded, placed = (int((tmp_path / name).read_text()) for name in ("loaded", "placed"))
    assert loaded == placed != os.getpid()
    assert not any(str(student) in str(getattr(module, "__file__", ""))
                   for module in list(sys.modules.values()))
