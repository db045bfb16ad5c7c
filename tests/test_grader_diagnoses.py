"""The grader names the mistake, not its first symptom (#42), and says no more than it saw
(#39): on real servers, with the sale left out where it does not matter.

Each student mistake below is a small lock file in tests/exercise_locks/: the first ✗ the
student reads must name the lesson of the mistake (its cause, when the check is only where
it showed), and its hint must be the one that fixes it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from helpers import require
from lockshop import exercises
from lockshop.cluster.redis_servers import redis_server_binary
from lockshop.cluster.zookeeper_servers import zookeeper_installed
from lockshop.room import Room
from lockshop.exercises import grader, results
from lockshop.exercises.diagnoses import DIAGNOSES

pytestmark = pytest.mark.cluster

HERE = Path(__file__).parent / "exercise_locks"
MUTANTS = HERE / "mutants.py"
HINTS = {row.lesson: str(row.hint) for row in DIAGNOSES}

#: exercise, the student's lock, the first check that fails (one of them, where which
#: shows first is up to Python), the lesson it must name.
MISTAKES = [
    # threading.get_ident() as the owner: the timeout check fails first when Python gives
    # the next thread the holder's dead id there (it mostly does), else the late release;
    # either way the cause is C49.
    ("4", f"{HERE / 'get_ident_lock.py'}:ReentrantLock", ("C26", "C11"), "C49"),
    # a release that counts down whoever is there and deletes at zero
    ("4", f"{HERE / 'owner_blind_release.py'}:ReentrantLock", ("C11",), "C11"),
    # the lease in seconds given to PX: a thousand times too short; C01 loses updates
    ("3", f"{HERE / 'lease_units.py'}:PxInSecondsLock", ("C01",), "C36"),
    # the lease in milliseconds given to EX: a thousand times too long; C09 waits in vain
    ("3", f"{HERE / 'lease_units.py'}:ExInMillisecondsLock", ("C09",), "C36"),
    # every waiter watches the queue's folder: a children's watch, which the server's wchp
    # does not list (the grader reads it from the waiters' clients)
    ("8", f"{HERE / 'watches_parent.py'}:QueueLock", ("C19",), "C19"),
    # the same herd, and the node ahead watched too: one watcher per node, but for the
    # folder's watches, which fire at every arrival and are set again a moment later
    ("8", f"{HERE / 'watches_parent.py'}:AlsoWatchesTheNodeAhead", ("C19",), "C19"),
]


def needs(family: str) -> None:
    installed = {"redis": redis_server_binary() is not None,
                 "zookeeper": zookeeper_installed()}[family]
    require(installed, f"the {family} server is not installed")


@pytest.mark.parametrize(("number", "lock", "symptom", "cause"), MISTAKES,
                         ids=[lock.rpartition(":")[2] + "-" + cause
                              for _n, lock, _s, cause in MISTAKES])
def test_the_first_fail_a_student_reads_names_the_mistake(number, lock, symptom, cause):
    exercise = exercises.find(number)
    needs(exercise.backend)
    graded = grader.grade(exercise, lock, sale=False)
    report = "\n".join(line for r in graded.results for line in r.lines())
    first = graded.first_failed
    assert first is not None and first.lesson in symptom, report
    assert first.broken_lesson == cause and graded.broken_lesson == cause, report
    assert first.hint == HINTS[cause], report
    printed = first.lines()
    assert any(line.strip().startswith(f"lesson {cause}") for line in printed), printed
    assert f"first broken lesson {cause}" in graded.summary()
    if first.lesson != cause or first.cause:  # a diagnosis: it says why, and what it saw
        assert first.cause == cause and f"lesson {cause}" in first.diagnosis, report


def test_a_release_that_never_compares_gets_no_tick_for_c12_and_is_sent_to_c11():
    needs("redis")
    graded = grader.grade(exercises.find("3"), "locks.redis_broken:PlainDelLock", sale=False)
    c12 = next(r for r in graded.results if r.lesson == "C12")
    assert not c12.applies and not c12.failed and c12.status == "not applicable", c12
    assert "C11" in c12.hint and "never read" in c12.observed
    assert c12.lines()[0].startswith(f"  {results.NOT_APPLICABLE_MARK} C12")
    assert graded.first_failed.lesson == "C11" and graded.first_failed.hint == HINTS["C11"]
    said = graded.summary()
    assert "1 does not apply" in said and f"of {len(graded.results) - 1} checks" in said


def test_a_check_that_does_not_apply_counts_as_neither():
    def result(lesson, passed, applies=True):
        return results.CheckResult(lesson, "a", "e", "o", passed, "h", applies=applies)
    right = results.Grade("3", "x.py:X", [result("C11", True), result("C12", False, False)])
    assert right.passed and right.first_failed is None and right.broken_lesson is None
    assert "passed: 1 of 1 checks; 1 does not apply" in right.summary()
    nothing = results.Grade("3", "x.py:X", [result("C12", False, False)])
    assert not nothing.passed


class _Board(BaseHTTPRequestHandler):
    """The room board's door, in front of the board's own ``Room`` (its checks, its
    code): what the grader posts is kept as the board keeps it."""

    room: Room
    kept: list

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert self.room.admits(self.headers.get("X-Room-Code"))
        self.room.record_self_reported(body)  # refuses what the board would not keep
        self.kept.append(body)
        self.send_response(201)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_repeat_reports_the_verdict_of_every_round_everywhere(tmp_path):
    """A lock that passes round 1 and breaks in round 2: 1 of 2 is a fail in the text, the
    JSON, Gradescope's file and the room board."""
    needs("redis")
    room = Room.open(tmp_path / "room")
    handler = type("Board", (_Board,), {"room": room, "kept": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    lock = f"{MUTANTS}:SecondRoundBreaks"
    check = [sys.executable, "-m", "lockshop.cli", "exercise", "check", "1", lock,
             "--repeat", "2"]
    scored = tmp_path / "results.json"
    try:
        runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
                for command in (check + ["--gradescope", str(scored), "--report", url,
                                         "--room", room.code, "--name", "Ada"],
                                check + ["--json"])]
        (text, text_err), (record, record_err) = (run.communicate(timeout=300) for run in runs)
    finally:
        server.shutdown()
        server.server_close()
        room.close()
    assert [run.returncode for run in runs] == [1, 1], text + text_err + record_err
    assert "not passed: 1 of 2 rounds passed" in text and "✗  1/2  C01" in text
    said = json.loads(record.strip().splitlines()[-1])
    assert said["passed"] is False and said["rounds_passed"] == 1 and said["rounds_total"] == 2
    assert said["broken_lesson"] == "C01" and [r["passed"] for r in said["rounds"]] == [True, False]
    results = json.loads(scored.read_text())
    assert results["score"] < results["max_score"]
    assert "not passed" in results["output"] and "1 of 2 rounds" in results["output"]
    posted = handler.kept
    assert len(posted) == 1 and posted[0]["passed"] is False and posted[0]["broken_lesson"] == "C01"
    c01 = next(c for c in posted[0]["checks"] if c["lesson"] == "C01")
    assert c01["passed"] is False


def test_every_diagnosis_is_said_in_chinese_too():
    """A diagnosis's words go through the catalog like every other (a lazy string handed to
    gettext once crashed the Chinese grader on its first diagnosis)."""
    from shop.i18n import _, language
    with language("zh-CN"):
        for row in DIAGNOSES:
            said = _(row.says, lesson=row.lesson, evidence="…")
            assert row.lesson in said and said != row.says, row.name
            assert _(row.hint) != row.hint and _(row.hint).strip(), row.name
