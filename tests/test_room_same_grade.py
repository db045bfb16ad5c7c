"""One grade across the sandbox: the same file, graded by the command line as a student
runs it (``lockshop exercise check N FILE``) and by the room as a student's Check does
(its API, its queue, the real grader in bubblewrap, its store and board), gets the same
verdict, mark for mark: each check's ✓, ✗ or – (does not apply), its lesson, what was
expected, why it broke and the lesson to study (the diagnosed cause first), its hint, the
verdict line and the board's first broken lesson.

What a check observed is left out of the comparison (two runs see their own figures), as
are the seconds; the digits of a diagnosis's evidence too (what the grader measured), not
its lesson. The room's lines are its records printed by the command line's own printer
(``CheckResult.lines``): the record must carry all of it. The room page's JavaScript
draws the same marks (tests/test_room_browser.py).

Before the record carried whether a check applies, its diagnosis and its cause, exercise
9 with a Lua compare-and-delete release passed on the command line (C37, the WATCH
conflict, does not apply) and failed in the room: "first broken lesson C37".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from flask import Flask

from helpers import wait_for
from lockshop.exercises.results import NOT_APPLICABLE_MARK, CheckResult
from lockshop.front_door import ADMIN_TOKEN
from lockshop.room.api import serve
from shop.i18n.web import init_app
from test_room_queue import rooms, sandbox_grading  # noqa: F401 - the room tests' fixtures

pytestmark = pytest.mark.cluster

LOCKS = Path(__file__).parent / "exercise_locks"
#: A grading in the sandbox with the sale takes about a minute here; two cores shared.
GRADING_S = 600


def only_class(path: Path, name: str) -> str:
    """``path``'s source with ``name`` its one lock class (the room grades a file whose
    lock is its only class, as the skeleton has it)."""
    source = path.read_text()
    classes = [match.start() for match in re.finditer(r"^class ", source, re.M)]
    kept = source[:classes[0]]
    for start, end in zip(classes, [*classes[1:], len(source)]):
        if source[start:end].startswith(f"class {name}("):
            kept += source[start:end]
    return kept


#: exercise, the file's text, what the command line says of it (the case's point).
CASES = {
    # A right WATCH/MULTI release: every check applies and passes.
    "right": ("9", (LOCKS / "watch_lock.py").read_text(), {"passed": True}),
    # A Lua compare-and-delete release: no gap between a read and a delete for WATCH to
    # close, so C37 does not apply, and the lock passes (C12 is its check).
    "does-not-apply": ("9", (LOCKS / "token_lock.py").read_text(),
                       {"passed": True, "not_applicable": "C37"}),
    # The lease given to EX in milliseconds: C09's next owner waits in vain, and the
    # grader finds the cause, the lease's unit (C36).
    "diagnosed": ("3", only_class(LOCKS / "lease_units.py", "ExInMillisecondsLock"),
                  {"passed": False, "broken_lesson": "C36"}),
}

MARK = re.compile(rf"^  ([✓✗{NOT_APPLICABLE_MARK}]) (C\d\d)  ")
OBSERVED = " " * 9 + "observed: "
WHY = " " * 9 + "why: "
SECONDS = re.compile(r" \([\d.]+ s\)$")
#: A figure, but not a lesson's id (C36) nor an article's (A2).
FIGURE = re.compile(r"(?<![CA\d])\d+(\.\d+)?")


def comparable(lines: list[str]) -> list[str]:
    """A check's printed lines, less what two runs see differently."""
    kept = []
    for line in lines:
        if line.startswith(OBSERVED):
            continue
        kept.append(FIGURE.sub("#", line) if line.startswith(WHY) else line)
    return kept


def command_line(exercise: str, source: Path) -> tuple[int, list[list[str]], str]:
    """``lockshop exercise check`` as a student runs it: its exit status, each check's
    printed lines, and its verdict line (after "=>")."""
    done = subprocess.run([sys.executable, "-m", "lockshop.cli", "exercise", "check",
                           exercise, str(source)], capture_output=True, text=True,
                          timeout=GRADING_S, env=english())
    checks: list[list[str]] = []
    verdict = None
    for line in done.stdout.splitlines():
        if MARK.match(line):
            checks.append([line])
        elif line.startswith(" " * 9) and checks:
            checks[-1].append(line)
        elif line.startswith("  => "):
            verdict = line[len("  => "):]
    assert verdict is not None and checks, done.stdout + done.stderr
    return done.returncode, checks, verdict


def english() -> dict:
    return {**os.environ, "LANGUAGE": "en", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}


def in_the_room(room, exercise: str, source: str) -> tuple[dict, dict]:
    """The file checked in the room through its API, as the page does: the submission as
    the student's browser reads it when done, and the board's result for it."""
    app = Flask(__name__)
    init_app(app)
    app.extensions[ADMIN_TOKEN] = None  # the instructor's actions are not what is tested
    serve(app, room)
    client = app.test_client()
    joined = client.post("/room/api/join", json={"code": room.code, "name": "Ada"},
                         headers={"Accept-Language": "en"})
    student = {"X-Student": joined.json["student"], "Accept-Language": "en"}
    posted = client.post("/room/api/submissions", json={"exercise": exercise,
                                                         "source": source}, headers=student)
    assert posted.status_code == 202, posted.json
    url = f"/room/api/submissions/{posted.json['id']}"
    done = wait_for(lambda: (seen := client.get(url, headers=student).json)["state"]
                    in ("done", "failed") and seen, timeout=GRADING_S, interval=1.0,
                    message="the room to grade the file")
    assert done["state"] == "done", done
    (result,) = [r for r in client.get("/room/api/board").json["results"]
                 if r["name"] == "Ada" and r["exercise"] == exercise]
    return done, result


@pytest.mark.parametrize("case", list(CASES))
def test_the_room_gives_the_command_line_s_grade_mark_for_mark(case, rooms,  # noqa: F811
                                                               sandbox_grading, tmp_path):
    exercise, source, says = CASES[case]
    written = tmp_path / "student_lock.py"
    written.write_text(source)
    status, printed, verdict = command_line(exercise, written)

    # What the case is about, as the command line says it.
    assert (status == 0) is says["passed"], verdict
    marks = {check[0][4:7]: check[0][2] for check in printed}
    if "not_applicable" in says:
        assert marks[says["not_applicable"]] == NOT_APPLICABLE_MARK, printed
        assert "1 does not apply" in verdict, verdict
    if "broken_lesson" in says:
        assert f"first broken lesson {says['broken_lesson']}" in verdict, verdict
        assert any(line.startswith(WHY) for check in printed for line in check), printed

    room = rooms(sandbox_grading)
    done, result = in_the_room(room, exercise, source)
    shown = [CheckResult.from_record(check, max_text=100_000) for check in done["checks"]]
    assert None not in shown, done["checks"]
    report = "\n".join(line for check in printed for line in check) + "\n" + verdict
    assert [comparable(check.lines()) for check in shown] == \
        [comparable(check) for check in printed], report
    assert done["passed"] is says["passed"]
    assert SECONDS.sub("", done["message"]) == SECONDS.sub("", verdict)
    cli_broken = re.search(r"first broken lesson (C\d\d)", verdict)
    assert (result["passed"], result["broken_lesson"]) == \
        (says["passed"], cli_broken and cli_broken.group(1))
