"""What the room keeps, in one SQLite file in the runtime folder, so a restart loses nothing.

Five tables: the room (its code), the students (a name, the hash of the secret
their browser holds), their sources (the text in the editor, per exercise), their
submissions (a check asked for: queued, running, done or failed, with each check
as it completes) and the results the board shows (the latest per name, exercise
and source: what the room graded, and apart what a student reported from their
own machine).

Writes go through one connection, one at a time (``_writing``: a lock, then
``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` if anything raises), so each
write is one transaction that is all there or not at all. Reads open their own
connection: in WAL mode a reader sees the last commit and never waits for the
writer, so thirty browsers polling the board do not hold up a grading's checks.

Failure: ``sqlite3.Error`` (a full disk, a file another program locked) goes up
to the caller; the room's API answers it as a 503.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from lockshop.exercises.results import Grade, read_checks
from lockshop.room.names import name_key
from lockshop.front_door import Refused
from shop.i18n import lazy_gettext

FILE_NAME = "room.sqlite3"
MAX_NAMES = 200
#: The most source a student's check takes: refused at the door past it, and by the
#: grading too (``sandboxed_grading``), whoever calls it.
MAX_SOURCE_BYTES = 64 * 1024
#: A check's fields are a sentence each; a student's lock may print much more into
#: "observed" (a traceback, a repr of a huge value): the board needs no more than this.
MAX_CHECK_FIELD = 2000
MAX_CHECKS = 100
#: Finished submissions kept per student (their source is up to 64 KB each).
KEPT_FINISHED = 10
ROOM, SELF_REPORTED = "room", "self-reported"
QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"

SCHEMA = """
CREATE TABLE IF NOT EXISTS room (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    code TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS students (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    key TEXT NOT NULL UNIQUE,          -- the name casefolded: "li" is "Li"
    secret_hash TEXT UNIQUE,           -- NULL once the instructor freed the name
    joined_at REAL NOT NULL,
    freed_at REAL
);
CREATE TABLE IF NOT EXISTS sources (
    student INTEGER NOT NULL REFERENCES students(id) ON DELETE CASCADE,
    exercise TEXT NOT NULL,
    text TEXT NOT NULL,
    saved_at REAL NOT NULL,
    PRIMARY KEY (student, exercise)
);
CREATE TABLE IF NOT EXISTS submissions (
    arrival INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,           -- unguessable: it is in the student's address bar
    student INTEGER NOT NULL REFERENCES students(id) ON DELETE CASCADE,
    exercise TEXT NOT NULL,
    source TEXT NOT NULL,
    language TEXT NOT NULL,            -- the checks and messages are said in it
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
    place INTEGER NOT NULL,            -- its turn: the arrival of the check it replaced, if any
    created_at REAL NOT NULL,
    checks TEXT NOT NULL DEFAULT '[]',
    passed INTEGER,
    message TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS submissions_in_line ON submissions (state, place);
CREATE INDEX IF NOT EXISTS submissions_of_student ON submissions (student, state);
CREATE TABLE IF NOT EXISTS results (
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    exercise TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('room', 'self-reported')),
    passed INTEGER NOT NULL,
    broken_lesson TEXT,                -- the first broken lesson, NULL when passed
    at INTEGER NOT NULL,
    PRIMARY KEY (key, exercise, source)
);
"""


@dataclass(frozen=True)
class Student:
    id: int
    name: str
    key: str


@dataclass(frozen=True)
class Submission:
    id: str
    student: int
    exercise: str
    source: str
    language: str


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class Store:
    """The room's file: open it again (a restart) and everything is where it was."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = folder / FILE_NAME
        # Every student's source and the hashes of their secrets: the instructor's alone.
        # The gradings run as another user; SQLite gives its -wal and -shm files the
        # database file's mode.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        os.chmod(self.path, 0o600)
        self._lock = threading.Lock()
        # isolation_level=None: no implicit transactions; each write says BEGIN itself.
        self._writer = sqlite3.connect(self.path, isolation_level=None,
                                       check_same_thread=False, timeout=30)
        self._writer.execute("PRAGMA journal_mode = WAL")
        self._writer.execute("PRAGMA foreign_keys = ON")
        self._writer.execute("PRAGMA synchronous = NORMAL")  # WAL: safe, and no fsync per check
        with self._writing() as db:
            for statement in _statements(SCHEMA):
                db.execute(statement)
            _rename_the_lesson_column(db)

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed if the block returns, rolled back if it raises."""
        with self._lock:
            self._writer.execute("BEGIN IMMEDIATE")
            try:
                yield self._writer
            except BaseException:
                self._writer.execute("ROLLBACK")
                raise
            self._writer.execute("COMMIT")

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A connection of this read's own: it sees the last commit, and waits for no write."""
        with closing(sqlite3.connect(self.path, timeout=30)) as db:
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA query_only = ON")
            with db:  # one read transaction: every SELECT in the block sees the same commit
                yield db

    def close(self) -> None:
        with self._lock:
            self._writer.close()

    # --- the room -----------------------------------------------------------------------

    def code(self, new: Callable[[], str], wanted: str | None = None) -> str:
        """The room's code: the one kept, else ``wanted``, else a ``new()`` one, kept from
        now on. A ``wanted`` code different from the kept one replaces it (an instructor
        reusing the code of an earlier room)."""
        with self._writing() as db:
            row = db.execute("SELECT code FROM room WHERE id = 1").fetchone()
            if row and (wanted is None or wanted == row[0]):
                return row[0]
            code = wanted or new()
            db.execute("INSERT INTO room (id, code, created_at) VALUES (1, ?, ?) "
                       "ON CONFLICT (id) DO UPDATE SET code = excluded.code",
                       (code, time.time()))
            return code

    # --- students -----------------------------------------------------------------------

    def join(self, name: str) -> str:
        """Give ``name`` (normalised) to a new browser: its secret. ``Refused`` with 409 when
        another browser holds the name, 403 when the room has ``MAX_NAMES`` already."""
        secret = secrets.token_urlsafe(32)
        key = name_key(name)
        with self._writing() as db:
            row = db.execute("SELECT id, secret_hash FROM students WHERE key = ?",
                             (key,)).fetchone()
            if row and row[1] is not None:
                raise Refused(409, lazy_gettext(
                        "the name %(name)s is taken in this room: choose another, or ask "
                        "the instructor to free it", name=name))
            if row:  # freed by the instructor: a new browser takes it, sources and all
                db.execute("UPDATE students SET secret_hash = ?, freed_at = NULL WHERE id = ?",
                           (secret_hash(secret), row[0]))
                return secret
            count = db.execute("SELECT count(*) FROM students").fetchone()[0]
            if count >= MAX_NAMES:
                raise Refused(403, lazy_gettext("the room is full: it has %(count)s names",
                                                count=MAX_NAMES))
            db.execute("INSERT INTO students (name, key, secret_hash, joined_at) "
                       "VALUES (?, ?, ?, ?)", (name, key, secret_hash(secret), time.time()))
        return secret

    def student(self, secret: object) -> Student | None:
        """The student whose browser holds ``secret``, or None."""
        if not isinstance(secret, str) or not 16 <= len(secret) <= 100:
            return None
        wanted = secret_hash(secret)
        with self._reading() as db:
            row = db.execute("SELECT id, name, key, secret_hash FROM students "
                             "WHERE secret_hash = ?", (wanted,)).fetchone()
        # The index found the row by the hash; the comparison that decides is the
        # constant-time one (what an index compares leaks nothing of the secret itself).
        if row is None or not hmac.compare_digest(row["secret_hash"], wanted):
            return None
        return Student(row["id"], row["name"], row["key"])

    def students(self) -> list[str]:
        """Every name, in the order they joined."""
        with self._reading() as db:
            return [row[0] for row in db.execute("SELECT name FROM students ORDER BY id")]

    def free(self, name: str) -> bool:
        """Let a new browser take ``name``: the old secret stops working; the sources,
        submissions and results stay with the name. False if there is no such name."""
        with self._writing() as db:
            changed = db.execute("UPDATE students SET secret_hash = NULL, freed_at = ? "
                                 "WHERE key = ?", (time.time(), name_key(name))).rowcount
        return changed > 0

    def remove(self, name: str) -> bool:
        """Take ``name`` out of the room with everything it did: sources, submissions
        (a waiting one is not run), results. False if there is no such name."""
        key = name_key(name)
        with self._writing() as db:
            removed = db.execute("DELETE FROM students WHERE key = ?", (key,)).rowcount
            db.execute("DELETE FROM results WHERE key = ?", (key,))
        return removed > 0

    # --- sources ------------------------------------------------------------------------

    def save_source(self, student: Student, exercise: str, text: str) -> None:
        with self._writing() as db:
            db.execute("INSERT INTO sources (student, exercise, text, saved_at) "
                       "VALUES (?, ?, ?, ?) ON CONFLICT (student, exercise) "
                       "DO UPDATE SET text = excluded.text, saved_at = excluded.saved_at",
                       (student.id, exercise, text, time.time()))

    def source(self, student: Student, exercise: str) -> dict | None:
        with self._reading() as db:
            row = db.execute("SELECT text, saved_at FROM sources WHERE student = ? "
                             "AND exercise = ?", (student.id, exercise)).fetchone()
        return {"source": row["text"], "saved_at": row["saved_at"]} if row else None

    # --- submissions --------------------------------------------------------------------

    def submit(self, student: Student, exercise: str, source: str, language: str,
               replaced_message: Callable[[str], str]) -> tuple[str, str | None]:
        """Put a check in line; the new submission's id, and the id of the one it replaced.

        A student has at most one waiting: a newer one replaces it (failed, with
        ``replaced_message(its language)``) and keeps its turn, so fixing a typo
        does not send a student to the back of the line. The source is also kept as
        the student's source for ``exercise``.
        """
        submission_id = secrets.token_urlsafe(16)
        now = time.time()
        with self._writing() as db:
            waiting = db.execute("SELECT id, place, language FROM submissions "
                                 "WHERE student = ? AND state = 'queued'",
                                 (student.id,)).fetchone()
            if waiting:
                db.execute("UPDATE submissions SET state = 'failed', message = ? WHERE id = ?",
                           (replaced_message(waiting[2]), waiting[0]))
            arrival = db.execute(
                    "INSERT INTO submissions (id, student, exercise, source, language, state, "
                    "place, created_at) VALUES (?, ?, ?, ?, ?, 'queued', 0, ?)",
                    (submission_id, student.id, exercise, source, language, now)).lastrowid
            db.execute("UPDATE submissions SET place = ? WHERE arrival = ?",
                       (waiting[1] if waiting else arrival, arrival))
            db.execute("INSERT INTO sources (student, exercise, text, saved_at) "
                       "VALUES (?, ?, ?, ?) ON CONFLICT (student, exercise) "
                       "DO UPDATE SET text = excluded.text, saved_at = excluded.saved_at",
                       (student.id, exercise, source, now))
        return submission_id, waiting[0] if waiting else None

    def take_next(self) -> Submission | None:
        """The submission whose turn it is, now marked running; None if none waits."""
        with self._writing() as db:
            row = db.execute("SELECT id, student, exercise, source, language FROM submissions "
                             "WHERE state = 'queued' ORDER BY place, arrival LIMIT 1").fetchone()
            if row is None:
                return None
            db.execute("UPDATE submissions SET state = 'running' WHERE id = ?", (row[0],))
        return Submission(*row)

    def add_check(self, submission_id: str, check: dict) -> None:
        """One more completed check, at the end of the submission's list."""
        kept = kept_checks([check])
        if not kept:
            return  # not a check: nothing to show
        with self._writing() as db:
            db.execute("UPDATE submissions SET checks = json_insert(checks, '$[#]', json(?)) "
                       "WHERE id = ? AND json_array_length(checks) < ?",
                       (json.dumps(kept[0], ensure_ascii=False), submission_id, MAX_CHECKS))

    def finish(self, submission_id: str, passed: bool | None, message: str,
               checks: list[dict] | None = None) -> None:
        """The grading's verdict. ``passed`` None: it could not give one (a limit was hit,
        the grader broke): the submission failed, and the board does not change. A
        verdict is the room's result on the board for that name and exercise."""
        with self._writing() as db:
            row = db.execute("SELECT s.student, s.exercise, s.checks, t.key, t.name "
                             "FROM submissions s JOIN students t ON t.id = s.student "
                             "WHERE s.id = ?", (submission_id,)).fetchone()
            if row is None:
                return  # removed with its student while it ran
            student, exercise, stored, key, name = row
            if checks is not None:
                stored = json.dumps(kept_checks(checks), ensure_ascii=False)
            state = FAILED if passed is None else DONE
            db.execute("UPDATE submissions SET state = ?, passed = ?, message = ?, checks = ? "
                       "WHERE id = ?", (state, passed, message[:MAX_CHECK_FIELD], stored,
                                        submission_id))
            if passed is not None:
                broken = None if passed else first_broken_lesson(json.loads(stored))
                _keep_result(db, key, name, exercise, ROOM, passed, broken)
            # Keep the latest few finished per student: each holds up to 64 KB of source.
            db.execute("DELETE FROM submissions WHERE student = ? AND state IN ('done', "
                       "'failed') AND arrival NOT IN (SELECT arrival FROM submissions "
                       "WHERE student = ? AND state IN ('done', 'failed') "
                       "ORDER BY arrival DESC LIMIT ?)", (student, student, KEPT_FINISHED))

    def interrupt_running(self, message: Callable[[str], str]) -> int:
        """On start-up: what was running when the room stopped cannot be finished; mark it
        failed with ``message(its language)``. How many there were."""
        with self._writing() as db:
            rows = db.execute("SELECT id, language FROM submissions "
                              "WHERE state = 'running'").fetchall()
            for submission_id, language in rows:
                db.execute("UPDATE submissions SET state = 'failed', message = ? WHERE id = ?",
                           (message(language), submission_id))
        return len(rows)

    def submission(self, submission_id: str, student: Student) -> dict | None:
        """What the student sees of their submission; None if it is not theirs (or gone)."""
        with self._reading() as db:
            row = db.execute("SELECT id, exercise, state, place, arrival, checks, passed, "
                             "message, created_at FROM submissions WHERE id = ? "
                             "AND student = ?", (submission_id, student.id)).fetchone()
            if row is None:
                return None
            position = None
            if row["state"] == QUEUED:
                ahead = db.execute("SELECT count(*) FROM submissions WHERE state = 'queued' "
                                   "AND (place < ? OR (place = ? AND arrival < ?))",
                                   (row["place"], row["place"], row["arrival"])).fetchone()[0]
                position = ahead + 1
            elif row["state"] == RUNNING:
                position = 0
        return {"id": row["id"], "exercise": row["exercise"], "state": row["state"],
                "position": position, "checks": json.loads(row["checks"]),
                "passed": None if row["passed"] is None else bool(row["passed"]),
                "message": row["message"], "created_at": row["created_at"]}

    def waiting_count(self) -> int:
        with self._reading() as db:
            return db.execute("SELECT count(*) FROM submissions "
                              "WHERE state = 'queued'").fetchone()[0]

    # --- results ------------------------------------------------------------------------

    def record_self_reported(self, name: str, exercise: str, passed: bool,
                             broken_lesson: str | None) -> dict:
        with self._writing() as db:
            return _keep_result(db, name_key(name), name, exercise, SELF_REPORTED, passed,
                                broken_lesson)

    def board(self) -> dict:
        """Every name (joined first, in the order they joined, then those only reported
        from their own machines) and the latest result per name, exercise and source."""
        with self._reading() as db:
            joined = [row[0] for row in db.execute("SELECT name FROM students ORDER BY id")]
            results = [{"name": row["name"], "exercise": row["exercise"],
                        "passed": bool(row["passed"]), "broken_lesson": row["broken_lesson"],
                        "source": row["source"], "at": row["at"]}
                       for row in db.execute("SELECT name, exercise, passed, broken_lesson, "
                                             "source, at FROM results ORDER BY at, rowid")]
        students = list(dict.fromkeys([*joined, *(r["name"] for r in results)]))
        return {"students": students, "results": results}


def _keep_result(db: sqlite3.Connection, key: str, name: str, exercise: str, source: str,
                 passed: bool, broken_lesson: str | None) -> dict:
    at = int(time.time())
    db.execute("INSERT INTO results (key, name, exercise, source, passed, broken_lesson, at) "
               "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key, exercise, source) DO UPDATE "
               "SET name = excluded.name, passed = excluded.passed, "
               "broken_lesson = excluded.broken_lesson, at = excluded.at",
               (key, name, exercise, source, passed, broken_lesson, at))
    return {"name": name, "exercise": exercise, "passed": passed,
            "broken_lesson": broken_lesson, "source": source, "at": at}


def _rename_the_lesson_column(db: sqlite3.Connection) -> None:
    """A room kept before the board's column was named for what it holds (``lesson``, the
    first broken lesson) keeps its board under the new name."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(results)")}
    if "lesson" in columns:
        db.execute("ALTER TABLE results RENAME COLUMN lesson TO broken_lesson")


def kept_checks(checks: list) -> list[dict]:
    """Checks as the room keeps them: each read back as a grade's record (the rest left
    out), its texts cut to a readable length, at most ``MAX_CHECKS``."""
    return [check.record() for check in read_checks(checks[:MAX_CHECKS],
                                                     max_text=MAX_CHECK_FIELD)]


def first_broken_lesson(checks: list) -> str | None:
    """The first broken lesson of the kept checks, as the command line names it: the first
    failed check's diagnosed cause, else its own lesson (a check that does not apply is
    neither passed nor failed)."""
    return Grade("", "", read_checks(checks, max_text=MAX_CHECK_FIELD)).broken_lesson


def _statements(script: str) -> list[str]:
    """The schema's statements one by one: ``executescript`` would commit the open
    transaction first, and the schema is created inside one."""
    lines = [line.split("--")[0] for line in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
