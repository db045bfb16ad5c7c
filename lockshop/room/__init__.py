"""The room: students join with a code and a name, write their locks in the browser, and
the instructor's machine grades them, one line of checks for the whole room.

``Room`` ties the parts together: the store (SQLite in the runtime folder: the
code, the names, the sources, the submissions and the board survive a restart),
the queue (N gradings at once, in the order students asked), the room's MariaDB (started
with the first grading of an exercise graded on it, stopped with the room) and the results a
student reports from their own machine, which are shown apart and never count as
passed. ``lockshop.room.api`` is its HTTP face (``serve(app, room)``), ``lockshop.room.page``
the page a student opens.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from lockshop.front_door import Refused
from lockshop.room.codes import CODE_ALPHABET, code_matches, is_code, new_code
from lockshop.room.grading_databases import GradingDatabases
from lockshop.room.names import normalised_name
from lockshop.room.queue import GradingFunction, GradingQueue, worker_count
from lockshop.room.self_reported import checked_self_reported
from lockshop.room.store import Store, Student
from lockshop.room.submitted import checked_source, known_exercise
from shop.i18n import gettext, lazy_gettext


class Room:
    """One workshop room, kept in ``folder``: open it again and it is where it was."""

    def __init__(self, store: Store, queue: GradingQueue, code: str,
                 databases: GradingDatabases | None = None) -> None:
        self.store, self.queue, self.code = store, queue, code
        self.databases = databases

    @classmethod
    def open(cls, folder: Path, *, code: str | None = None, workers: int | None = None,
             grade: GradingFunction | None = None, without_limits: bool = False) -> Room:
        """The room kept in ``folder`` (made if new), its queue running. ``code`` reuses a
        room code (else the kept one, else a new one); ``workers`` is how many gradings
        run at once (default: the cores, plus one); ``grade`` grades one submission (default:
        in the sandbox). ``without_limits`` (``up --room-without-limits``): a grading
        whose cgroup limits cannot be set runs without them, saying so, instead of being
        refused."""
        if code is not None:
            code = code.strip().upper()
            if not is_code(code):
                raise ValueError(gettext(
                        "a room code is 4 to 16 of these letters and digits: %(alphabet)s",
                        alphabet=CODE_ALPHABET))
        workers = worker_count(workers)  # refused before the store is opened
        store = Store(folder)
        kept_code = store.code(new_code, code)
        databases = None
        if grade is None:
            # Nothing starts here: the server starts with the first grading that needs it.
            databases = GradingDatabases(folder / "mariadb")
            grade = partial(grade_in_sandbox, databases=databases,
                            without_limits=without_limits)
        queue = GradingQueue(store, grade, workers)
        queue.start()
        return cls(store, queue, kept_code, databases)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the workers, waiting up to ``timeout`` for running gradings (one that
        still runs after it is marked interrupted when the room opens again)."""
        self.queue.close(timeout)
        if self.databases is not None:
            self.databases.close()
        self.store.close()

    # --- what the API and the control ask -------------------------------------------

    def join(self, code: object, name: object) -> tuple[str, str]:
        """Give a browser a name: (its secret, the name as the room keeps it)."""
        if not code_matches(code, self.code):
            raise Refused(401, lazy_gettext("that is not this room's code: it is on the "
                                            "instructor's screen"))
        name = normalised_name(name)
        return self.store.join(name), name

    def student(self, secret: object) -> Student:
        """The student whose browser sent ``secret``; ``Refused`` (401) if none."""
        student = self.store.student(secret)
        if student is None:
            raise Refused(401, lazy_gettext(
                    "join the room first: this browser has no name in it "
                    "(X-Student: the secret that joining gave)"))
        return student

    def submit(self, student: Student, exercise: object, source: object, tag: str) -> str:
        """Put the student's check in line; its id."""
        exercise_id = known_exercise(exercise)
        return self.queue.submit(student, exercise_id, checked_source(source), tag)

    def record_self_reported(self, body: object) -> dict:
        """Keep a result a student's own machine graded (``exercise check --report``): shown
        apart on the board, never counted as passed by the room. The room code is
        checked by the caller (the control's X-Room-Code); the rest here, by the one rule
        (``self_reported``). ``Refused`` (400, 422) keeps nothing."""
        result = checked_self_reported(body)
        return self.store.record_self_reported(result.name, result.exercise, result.passed,
                                               result.broken_lesson)

    def admits(self, code: object) -> bool:
        """Whether ``code`` is this room's code (for the control's X-Room-Code)."""
        return code_matches(code, self.code)

    def board(self) -> dict:
        return self.store.board()


def grade_in_sandbox(exercise_id: str, source: str, language: str, *, on_check,
                     databases: GradingDatabases, without_limits: bool = False) -> object:
    """The room's grading: the same grader as ``lockshop exercise check``, in the sandbox,
    an exercise graded on MariaDB on a database of its own on the room's server.
    Imported when the first check runs, so that a room opens (and shows its board)
    on a machine that cannot grade, and each check says why."""
    from lockshop.room.sandboxed_grading import grade_in_sandbox as sandboxed
    return sandboxed(exercise_id, source, language, on_check=on_check, databases=databases,
                     without_limits=without_limits)


__all__ = ["Refused", "Room", "checked_source", "known_exercise"]
