"""The exercises' grader, on real servers: the references pass, the mutants fail on the
lesson they break, the skeletons and broken files fail cleanly.

Every grade here starts servers of its own (a Redis or a ZooKeeper, three shop
instances for the sale), as a student's ``lockshop exercise check`` does.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import require
from lockshop import exercises
from lockshop.cluster.redis_servers import redis_server_binary
from lockshop.cluster.scratch import DEFAULT_SERVERS, server_error
from lockshop.cluster.zookeeper_servers import zookeeper_installed
from lockshop.exercises import grader, grading
from lockshop.exercises.diagnoses import DIAGNOSES
from lockshop.exercises.registry import LOCK

pytestmark = pytest.mark.cluster

HERE = Path(__file__).parent / "exercise_locks"
MUTANTS = HERE / "mutants.py"

#: lock x exercise -> the first broken lesson the grader names (None: it passes): the cause
#: when the grader knows the mistake behind the first check that fails (a thread id reused
#: by Python lets the next thread in at the timeout check already, C26, and the grader says
#: that the cause is C49), else that check's lesson. Where a lock breaks an earlier lesson
#: as well, that one comes first: a DEL that frees the whole reentrant hash frees another's
#: lock too (C11), an acquire in separate commands sets its expiry apart from its key (C10).
#: The lesson the exercise forces (MUST_FAIL) fails every time, whatever came before it.
TABLE = [
    ("1", "locks.redis_broken:SetnxNoExpiryLock", None),  # the reference of exercise 1
    ("1", f"{MUTANTS}:InProcessLock", "C03"),
    ("1", f"{MUTANTS}:InProcessTrustedLock", "C03"),
    ("2", "locks.redis_broken:PlainDelLock", None),
    ("2", "locks.redis_broken:SetnxNoExpiryLock", "C09"),
    ("2", "locks.redis_broken:SetnxThenExpireLock", "C10"),
    ("3", "locks.redis_lock:RedisLock", None),
    ("3", "locks.redis_broken:PlainDelLock", "C11"),
    ("3", "locks.redis_broken:GetThenDelLock", "C12"),
    ("4", "locks.redis_reentrant:ReentrantRedisLock", None),
    ("4", "locks.redis_lock:RedisLock", "C13"),
    ("4", "locks.redis_broken:ReentrantDeleteLock", "C11"),
    ("4", "locks.redis_broken:ReentrantInStepsLock", ("C01", "C10")),  # its EXPIRE is apart
    ("4", "locks.redis_broken:ThreadIdOwnerLock", "C49"),
    # Exercise 5's reference is exercise 6's too, and 6 runs 5's checks: its row below.
    ("5", "locks.redis_reentrant:ReentrantRedisLock", "C14"),
    ("6", "locks.redisson:RedissonLock", None),
    ("6", f"{MUTANTS}:UnfencedRedisson", "C15"),
    ("7", "locks.zk_simple:ZkSimpleLock", None),
    ("8", "locks.zk_fair:ZkFairLock", None),
    ("8", "locks.zk_simple:ZkSimpleLock", "C19"),
    ("8", "locks.zk_broken:TrustingQueueLock", "C38"),
    ("8", f"{MUTANTS}:LeavesItsNode", "C38"),
]


#: The lesson whose window the grader forces, for the locks that break earlier ones too.
MUST_FAIL = {"locks.redis_broken:ReentrantDeleteLock": "C27",
             "locks.redis_broken:ReentrantInStepsLock": "C28",
             "locks.redis_broken:ThreadIdOwnerLock": "C49"}


def needs(backend: str) -> None:
    if backend == "mysql":  # this machine's MariaDB (exercise 18)
        error = server_error(DEFAULT_SERVERS["mysql"])
        require(error is None, f"MariaDB is not usable ({error})")
        return
    installed = {"redis": redis_server_binary() is not None,
                 "redlock": redis_server_binary() is not None,  # five Redis servers
                 "zookeeper": zookeeper_installed(),
                 "sqlite": True}[backend]  # a lock table's or an order step's: a file
    require(installed, f"the {backend} server is not installed")


def cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lockshop.cli", "exercise", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_there_are_eight_exercises_on_the_articles_path():
    listed = exercises.listing()
    assert [e["id"] for e in listed][:8] == [str(n) for n in range(1, 9)]
    assert {e["backend"] for e in listed[:8]} == {"redis", "zookeeper"}
    assert exercises.find("3").lessons == ("C11", "C12")
    assert exercises.find("8").lessons == ("C19", "C20", "C38")
    printed = cli("list").stdout
    assert "lessons C11 C12" in printed and "A0, A2, A4" in printed


@pytest.mark.parametrize(("number", "lock", "first_failed"), TABLE,
                         ids=[f"{n}-{lock.rpartition(':')[2]}" for n, lock, _ in TABLE])
def test_the_grader_names_the_first_lesson_a_lock_breaks(number, lock, first_failed):
    exercise = exercises.find(number)
    needs(exercise.backend)
    # The sale across three instances (the slow check, always the last) only where the
    # row is about it or about a lock that must pass everything.
    sale = first_failed is None or first_failed in ("C02", "C03")
    graded = grader.grade(exercise, lock, sale=sale)
    assert len(graded.results) == len(exercise.checks()) - (0 if sale else 1)
    failed = graded.first_failed
    report = "\n".join(line for r in graded.results for line in r.lines())
    if isinstance(first_failed, tuple):
        # It breaks earlier checks too, by luck (a race among the contract's threads); the
        # lesson's own check forces the window.
        assert failed is not None and failed.lesson in first_failed, report
    else:
        assert graded.broken_lesson == first_failed, report
    if lock in MUST_FAIL:
        assert MUST_FAIL[lock] in {r.lesson for r in graded.results if r.failed}, report
    if lock.endswith(":InProcessTrustedLock"):
        # Two holders at once that both wrote, and not for a hold past its lease: the
        # longest hold, beside the lease, says so.
        held = re.search(r"both wrote: [1-9]\d*;.*the longest hold: (\d+\.\d) s \(the lease: "
                         r"15 s\)", failed.observed)
        assert held and float(held.group(1)) < 15, report
    if failed:
        assert failed.hint and failed.lesson_title and failed.articles
        # The hint the student reads is the cause's when the check is only its symptom.
        causes = {row.lesson: str(row.hint) for row in DIAGNOSES}
        if failed.cause:
            assert failed.hint == causes[failed.cause], report
        else:
            wanted = next(c for c in exercise.checks() if c.lesson == failed.lesson)
            assert failed.hint == str(wanted.hint), report


def test_a_students_solution_passes_from_the_command_line_with_every_output(tmp_path):
    needs("redis")
    results = tmp_path / "results.json"
    done = cli("check", "3", str(HERE / "token_lock.py"), "--json", "--gradescope", str(results))
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["passed"] and record["lock"].endswith("token_lock.py:TokenLock")
    assert [r["lesson"] for r in record["rounds"][0]["results"]][-3:] == ["C11", "C12", "C03"]
    scored = json.loads(results.read_text())
    assert scored["score"] == scored["max_score"] == len(exercises.find("3").checks())
    assert all(t["status"] == "passed" for t in scored["tests"])


def test_repeat_counts_each_check_and_a_fail_exits_1(tmp_path):
    needs("redis")
    done = cli("check", "3", "locks.redis_broken:GetThenDelLock", "--repeat", "2")
    assert done.returncode == 1
    assert "✓  2/2  C11" in done.stdout and "✗  0/2  C12" in done.stdout


def test_a_zookeeper_students_solution_passes(tmp_path):
    needs("zookeeper")
    graded = grader.grade(exercises.find("8"), f"{HERE / 'queue_lock.py'}:QueueLock")
    assert graded.passed, [r.lines() for r in graded.results if not r.passed]
    herd = next(r for r in graded.results if r.lesson == "C19").observed
    assert "wakes only that one" in herd and "them all" not in herd, herd


# One test per skeleton, so that parallel workers share them out; two checks at once
# are test_two_checks_at_once_both_finish's.
@pytest.mark.parametrize("number", list(exercises.EXERCISES))
def test_every_untouched_skeleton_fails_cleanly_with_its_todos(tmp_path, number):
    exercise = exercises.find(number)
    needs(exercise.backend)
    started = cli("start", number, str(tmp_path))
    assert started.returncode == 0 and str(tmp_path / exercise.file) in started.stdout
    assert f"lockshop exercise check {number}" in started.stdout
    done = cli("check", number, exercise.file, cwd=tmp_path)
    out, err = done.stdout, done.stderr
    assert done.returncode == 1, out + err
    assert "Traceback" not in out + err
    assert "TODO left (line" in out and "not written yet: TODO" in out
    assert "not run: " in out  # the sale waits for the TODOs
    assert f"exercise {number} not passed" in out
    # Nothing ran: no hint may say what a lock did (two threads inside at once).
    assert "Two threads were inside at once" not in out and "Nothing ran" in out, out
    if not exercise.asks_still_held:
        assert "_still_held" not in out, out


def test_the_sales_hint_names_what_the_skeleton_has():
    for exercise in exercises.EXERCISES.values():
        if exercise.writes != LOCK:
            continue  # no lock, no sale of locks (a step's sale speaks of its SQL)
        hint = str(exercise.checks()[-1].hint)
        named = "_still_held" in exercise.skeleton.read_text()
        assert exercise.asks_still_held == named
        assert ("_still_held" in hint) == named, (exercise.id, hint)
        if not named:
            assert "self.token" in hint
    assert not exercises.find("1").asks_still_held and exercises.find("4").asks_still_held


def test_start_never_overwrites(tmp_path):
    (tmp_path / "token_lock.py").write_text("mine")
    done = cli("start", "3", str(tmp_path))
    assert done.returncode == 2 and "exists already" in done.stderr
    assert (tmp_path / "token_lock.py").read_text() == "mine"


@pytest.mark.parametrize(("source", "said"), [
    ("from locks.redis_support import RedisLockBase\nclass A(RedisLockBase)\n    pass\n",
     "broken.py:2: syntax error"),
    ("import no_such_module_anywhere\n", "broken.py:1: ModuleNotFoundError"),
    ("x = 1\n", "broken.py: has no lock class"),
    ("from locks.redis_support import RedisLockBase\nclass A(RedisLockBase): pass\n"
     "class B(RedisLockBase): pass\n", "has 2 lock classes (A, B): name one"),
    ("from locks.zk_session import ZooKeeperLockBase\nclass A(ZooKeeperLockBase): pass\n",
     "is a zookeeper lock; exercise 3 is a redis exercise"),
])
def test_a_file_that_gives_no_lock_gets_one_line_and_exit_2(tmp_path, source, said):
    (tmp_path / "broken.py").write_text(source)
    done = cli("check", "3", "broken.py", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert said in done.stderr


def test_bad_names_get_one_line_and_exit_2(tmp_path):
    for args, said in ((("check", "3", "nowhere.py"), "nowhere.py: no such file"),
                       (("check", "99", "x.py"), "no exercise '99'"),
                       (("check", "3", "x.py:NoSuchClass"), "x.py: no such file"),
                       (("start", "3", str(tmp_path / "missing")), "no such folder")):
        done = cli(*args, cwd=tmp_path)
        assert done.returncode == 2 and said in done.stderr, (args, done.stderr)


def test_a_lock_that_hangs_fails_in_bounded_time(monkeypatch):
    needs("redis")
    monkeypatch.setattr(grading, "CHECK_SECONDS", 2.0)
    graded = grader.grade(exercises.find("1"), f"{MUTANTS}:HangingLock")
    assert not graded.passed
    assert "did not finish in 2 s" in graded.results[0].observed
    assert graded.seconds < 60


def test_two_checks_at_once_both_finish():
    needs("redis")
    command = [sys.executable, "-m", "lockshop.cli", "exercise", "check", "1",
               "locks.redis_broken:SetnxNoExpiryLock"]
    both = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    for process in both:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, out + err
