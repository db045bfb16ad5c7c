"""The room's line of checks: at most N gradings at once, students in the order they came,
one waiting check per student (a newer one replaces it and keeps its place), each knowing
its position, and a restart that runs what waited and marks what ran as interrupted.

The gradings here are the queue's own dependency, given to it: each waits until the test
lets it finish, so that who runs when is forced by the test, never by timing. The last
test grades through the real sandbox."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers import require, wait_for
from lockshop.exercises import EXERCISES
from lockshop.room import Room
from lockshop.room.queue import INTERRUPTED
from lockshop.room.store import Student
from shop.i18n import gettext, language


class Gate:
    """Gradings that start when the queue runs them and finish when the test says: each
    source's grading waits for ``finish(source)``; ``started`` lists them in the order the
    queue ran them. A source with "right" in it passes."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self._finish: dict[str, threading.Event] = {}
        self._guard = threading.Lock()
        self._all = False  # finish_all(): every grading, and every later one, finishes

    def _event(self, source: str) -> threading.Event:
        with self._guard:
            event = self._finish.setdefault(source, threading.Event())
            if self._all:
                event.set()
            return event

    def finish(self, *sources: str) -> None:
        for source in sources:
            self._event(source).set()

    def finish_all(self) -> None:
        with self._guard:
            self._all = True
            for event in self._finish.values():
                event.set()

    def running(self) -> list[str]:
        return [s for s in self.started if not self._event(s).is_set()]

    def __call__(self, exercise: str, source: str, language: str, *, on_check):
        with self._guard:
            self.started.append(source)
        if source == "raises":
            raise RuntimeError("the grader's own server did not start")
        on_check({"lesson": "C11", "passed": True, "action": "release late",
                  "expected": "refused", "observed": "refused", "hint": "",
                  "lesson_title": "a late release"})
        assert self._event(source).wait(30), f"the test never finished {source!r}"
        passed = "right" in source
        checks = [{"lesson": "C11", "passed": True},
                  {"lesson": "C12", "passed": passed}]
        return SimpleNamespace(passed=passed, checks=checks,
                               message="passed" if passed else "C12 broken")


@pytest.fixture()
def gate():
    opened = Gate()
    yield opened
    opened.finish_all()


@pytest.fixture()
def rooms(tmp_path):
    """Open rooms on tmp_path's folder; each is closed at the end."""
    opened: list[Room] = []

    def open_room(grade, workers: int = 1) -> Room:
        room = Room.open(tmp_path / "room", workers=workers, grade=grade)
        opened.append(room)
        return room

    yield open_room
    for room in opened:
        room.close()


def students(room: Room, *names: str) -> list[Student]:
    return [room.store.student(room.store.join(name)) for name in names]


def seen(room: Room, submission: str, student: Student) -> dict:
    return room.store.submission(submission, student)


def state(room: Room, submission: str, student: Student) -> str:
    return seen(room, submission, student)["state"]


def test_students_are_served_in_the_order_they_came_and_see_their_place(rooms, gate):
    room = rooms(gate)
    ann, bob, cy = students(room, "Ann", "Bob", "Cy")
    a = room.submit(ann, "3", "ann", "en")
    wait_for(lambda: gate.started == ["ann"])
    b = room.submit(bob, "3", "bob", "en")
    c = room.submit(cy, "3", "cy", "en")
    assert [seen(room, s, who)["position"] for s, who in ((a, ann), (b, bob), (c, cy))] \
        == [0, 1, 2]
    assert state(room, a, ann) == "running" and state(room, c, cy) == "queued"
    gate.finish("ann")
    wait_for(lambda: gate.started == ["ann", "bob"])
    assert seen(room, c, cy)["position"] == 1
    assert state(room, a, ann) == "done"
    gate.finish("bob", "cy")
    wait_for(lambda: state(room, c, cy) == "done")
    assert gate.started == ["ann", "bob", "cy"]


def test_a_newer_check_replaces_the_waiting_one_and_keeps_its_place(rooms, gate):
    room = rooms(gate)
    ann, bob, cy = students(room, "Ann", "Bob", "Cy")
    room.submit(ann, "3", "ann", "en")
    wait_for(lambda: gate.started == ["ann"])
    first = room.submit(bob, "3", "bob 1", "en")
    c = room.submit(cy, "3", "cy", "en")
    second = room.submit(bob, "3", "bob 2", "en")
    replaced = seen(room, first, bob)
    assert replaced["state"] == "failed" and replaced["message"] == "replaced by a newer check"
    assert replaced["position"] is None
    assert seen(room, second, bob)["position"] == 1  # Bob's place, ahead of Cy
    assert seen(room, c, cy)["position"] == 2
    assert room.store.waiting_count() == 2
    gate.finish_all()
    wait_for(lambda: state(room, c, cy) == "done")
    assert gate.started == ["ann", "bob 2", "cy"]  # the replaced one never ran
    # What the student checked last is what the editor shows them next.
    assert room.store.source(bob, "3")["source"] == "bob 2"


def test_a_running_check_is_not_replaced(rooms, gate):
    room = rooms(gate)
    (ann,) = students(room, "Ann")
    running = room.submit(ann, "3", "ann 1", "en")
    wait_for(lambda: gate.started == ["ann 1"])
    waiting = room.submit(ann, "3", "ann 2 right", "en")
    assert state(room, running, ann) == "running"
    assert seen(room, waiting, ann)["position"] == 1
    gate.finish_all()
    wait_for(lambda: state(room, waiting, ann) == "done")
    assert seen(room, running, ann)["passed"] is False
    assert seen(room, waiting, ann)["passed"] is True
    assert [(r["passed"], r["broken_lesson"]) for r in room.board()["results"]] == [(True, None)]


def test_at_most_n_gradings_run_at_once(rooms, gate):
    room = rooms(gate, workers=2)
    ann, bob, cy = students(room, "Ann", "Bob", "Cy")
    room.submit(ann, "3", "ann", "en")
    room.submit(bob, "3", "bob", "en")
    c = room.submit(cy, "3", "cy", "en")
    wait_for(lambda: sorted(gate.started) == ["ann", "bob"])
    assert seen(room, c, cy)["position"] == 1 and state(room, c, cy) == "queued"
    gate.finish("bob")
    wait_for(lambda: gate.running() == ["ann", "cy"])
    gate.finish_all()
    wait_for(lambda: state(room, c, cy) == "done")


def test_each_check_is_stored_as_it_completes(rooms, gate):
    room = rooms(gate)
    (ann,) = students(room, "Ann")
    a = room.submit(ann, "3", "ann", "en")
    running = wait_for(lambda: (now := seen(room, a, ann))["checks"] and now)
    assert running["state"] == "running" and running["passed"] is None
    assert [c["lesson"] for c in running["checks"]] == ["C11"]
    gate.finish("ann")
    done = wait_for(lambda: (now := seen(room, a, ann))["state"] == "done" and now)
    assert [(c["lesson"], c["passed"]) for c in done["checks"]] == [("C11", True),
                                                                     ("C12", False)]
    assert done["message"] == "C12 broken"
    assert room.board()["results"][0]["broken_lesson"] == "C12"


def test_a_grading_that_raises_fails_its_check_and_the_line_goes_on(rooms, gate):
    room = rooms(gate)
    ann, bob = students(room, "Ann", "Bob")
    broken = room.submit(ann, "3", "raises", "en")
    after = room.submit(bob, "3", "bob right", "en")
    gate.finish("bob right")
    wait_for(lambda: state(room, after, bob) == "done")
    failed = seen(room, broken, ann)
    assert failed["state"] == "failed" and failed["passed"] is None
    assert "the grader's own server did not start" in failed["message"]
    assert [r["name"] for r in room.board()["results"]] == ["Bob"]  # no verdict, no result


def test_a_removed_student_s_waiting_check_does_not_run(rooms, gate):
    room = rooms(gate)
    ann, bob, cy = students(room, "Ann", "Bob", "Cy")
    room.submit(ann, "3", "ann", "en")
    wait_for(lambda: gate.started == ["ann"])
    room.submit(bob, "3", "bob", "en")
    c = room.submit(cy, "3", "cy", "en")
    assert room.store.remove("Bob")
    gate.finish("ann", "cy")
    wait_for(lambda: state(room, c, cy) == "done")
    assert gate.started == ["ann", "cy"]


def test_a_restart_runs_what_waited_in_order_and_marks_what_ran_interrupted(rooms, gate):
    before = rooms(gate)
    ann, bob, cy = students(before, "Ann", "Bob", "Cy")
    a = before.submit(ann, "3", "ann", "zh_CN")
    wait_for(lambda: gate.started == ["ann"])
    c = before.submit(cy, "3", "cy", "en")
    b = before.submit(bob, "3", "bob", "en")
    before.close(timeout=0.1)  # Ann's grading still runs: the room stops without it

    after_gate = Gate()
    try:
        after = rooms(after_gate)
        interrupted = seen(after, a, ann)
        assert interrupted["state"] == "failed" and interrupted["passed"] is None
        # Said in the language Ann checked in, whatever language the room restarts in.
        with language("zh_CN"):
            assert interrupted["message"] == gettext(INTERRUPTED)
        wait_for(lambda: after_gate.started == ["cy"])
        assert seen(after, b, bob)["position"] == 1
        after_gate.finish_all()
        wait_for(lambda: state(after, b, bob) == "done")
        assert after_gate.started == ["cy", "bob"]
    finally:
        after_gate.finish_all()
    # The first room's grading of Ann ends now; it must not overwrite what the
    # restarted room decided.
    gate.finish("ann")
    for thread in before.queue._threads:
        thread.join(10)
    assert seen(after, a, ann)["state"] == "failed"


def test_a_restart_s_interrupted_message_in_english(rooms, gate):
    before = rooms(gate)
    (ann,) = students(before, "Ann")
    a = before.submit(ann, "3", "ann", "en")
    wait_for(lambda: gate.started == ["ann"])
    before.close(timeout=0.1)
    after = rooms(Gate())
    assert seen(after, a, ann)["message"] == "interrupted, check again"


@pytest.fixture()
def sandbox_grading():
    try:
        from lockshop.room.sandboxed_grading import grade_in_sandbox
    except ImportError as error:
        pytest.skip(f"the sandbox's grading is not in this tree yet: {error}")
    require(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed")
    return grade_in_sandbox


def test_a_check_graded_in_the_real_sandbox_reaches_the_board(rooms, sandbox_grading):
    """End to end, through the real grader in bubblewrap: the skeleton of exercise 3, its
    TODOs still in, is a ✗ with its first broken lesson; while it runs, each check the
    sandbox reports is already what the student's browser reads."""
    submitted = threading.Event()
    ids: list[str] = []
    while_running: list[tuple[str, int, int]] = []

    def grade(exercise, source, language, *, on_check):
        def reported(check: dict) -> None:
            on_check(check)
            assert submitted.wait(10)
            now = seen(room, ids[0], ann)
            while_running.append((now["state"], len(now["checks"]), len(while_running) + 1))
        return sandbox_grading(exercise, source, language, on_check=reported)

    room = rooms(grade)
    (ann,) = students(room, "Ann")
    skeleton = EXERCISES["3"].skeleton.read_text()
    ids.append(room.submit(ann, "3", skeleton, "en"))
    submitted.set()
    done = wait_for(lambda: (now := seen(room, ids[0], ann))["state"] in ("done", "failed")
                    and now, timeout=300)
    assert done["state"] == "done", done["message"]
    assert done["passed"] is False and done["checks"]
    assert while_running and all(state == "running" and stored == reported
                                 for state, stored, reported in while_running)
    first_broken = next(c["lesson"] for c in done["checks"] if not c["passed"])
    (result,) = room.board()["results"]
    assert (result["name"], result["source"], result["passed"], result["broken_lesson"]) == \
        ("Ann", "room", False, first_broken)


def test_the_real_sandbox_passes_a_right_lock(rooms, sandbox_grading):
    """A right token lock (the project's exercise solution) passes in the room, and only
    then does the board show the room's ✓."""
    room = rooms(sandbox_grading)
    (ann,) = students(room, "Ann")
    right = (Path(__file__).parent / "exercise_locks" / "token_lock.py").read_text()
    a = room.submit(ann, "3", right, "en")
    done = wait_for(lambda: (now := seen(room, a, ann))["state"] in ("done", "failed") and now,
                    timeout=600)
    assert done["passed"] is True, done
    assert all(c["passed"] for c in done["checks"])
    assert room.board()["results"][0]["passed"] is True


def test_a_queue_needs_a_worker(tmp_path, gate):
    with pytest.raises(ValueError, match="at least one grading at a time, not 0"):
        Room.open(tmp_path / "room", workers=0, grade=gate)
