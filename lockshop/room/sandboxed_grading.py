"""A student's source, graded in the sandbox: what the room's queue calls.

The source is written into a fresh folder of its own (closed to everyone but root; only
its one file is bound into the sandbox, read-only), ``lockshop.room.inside`` grades it
there, and its report lines are read as untrusted text: each line capped, parsed as
JSON only (never evaluated), and kept only when it is a well-formed check, verdict or
load error, read back by the grade's own record (``lockshop.exercises.results``): the
room has what the command line has (whether a check applies, its diagnosis and cause,
the first broken lesson) and says the verdict in the command line's own line. The
outcome's message is one line in the student's language: the verdict, the limit that
stopped the grading, or why the code did not load. A grading whose cgroup limits cannot be
set is not graded, and says why; only in a room opened without them
(``--room-without-limits``) does it run, its message ending with what did not hold.

What the sandbox guarantees is containment; the verdict is honest because the grader grades
out of process (``lockshop.exercises.grader.out_of_process``: every exercise, the locks,
the leader election, the job guards and the order steps): the grader runs as a user of
its own (``sandbox.GRADER``) and the student's code only in processes it starts as
``nobody``, which hold no end of the report pipe and can neither signal nor read it
(``lockshop.room.inside`` says what it trusts). One check is an exception: the flash sale
(C03; C02 on ZooKeeper; the election's is the shop's jobs, C24, and so are the job guards'
C04, C05 and C42; an order step's is C01, C07, C25 or C44; the last check). Its figures
are the shop's audit, read from the sale's database, and the holds its shop instances
logged; those instances run the student's code as ``nobody`` and are given that database
to write (``lockshop.exercises.checks.sale.StudentsCluster``), so code written to forge
the audit could pass the sale. The other checks' verdicts come from what the grader
counted itself, out of the student's processes' reach (a lock table's rows, which its lock
writes, the grader reads from the database itself). What is checked here stops the cheap
forgeries besides: a line printed on stdout never counts (the report has a pipe of its
own), the checks must come as the exercise runs them, each lesson in its place, and a
pass needs every one of them.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from lockshop.cluster.processes import StartError
from lockshop.exercises import registry
from lockshop.exercises.grader import out_of_process
from lockshop.exercises.results import CheckResult, Grade
from lockshop.room import sandbox
from lockshop.room.grading_databases import BACKENDS, INSIDE_SOCKET_FOLDER, GradingDatabases
from lockshop.room.sandbox import Limits
from lockshop.room.store import MAX_SOURCE_BYTES
from shop.i18n import _
from shop.i18n import language as speaking

LOGGER = logging.getLogger(__name__)

#: The longest report line, and the longest text kept from one of its fields.
MAX_LINE = 64 * 1024
MAX_FIELD = 4000
#: Where the student's file is, inside the sandbox.
SUBMISSION = "/tmp/submission"
#: Beside it, for a grading on the room's MariaDB: its database's URL.
DATABASE_FILE = "database-url"


@dataclass
class GradingOutcome:
    #: The grader's verdict; None when it gave none (a limit stopped it, the code did not
    #: load, or the grading broke).
    passed: bool | None
    checks: list[dict] = field(default_factory=list)
    #: One line, in the student's language.
    message: str = ""
    #: The limit that stopped it (``sandbox.MEMORY``, ``sandbox.WALL``, ...), or None.
    limit: str | None = None
    #: What the grading used (peak memory, processes, CPU, wall time), when it ran.
    usage: sandbox.Usage | None = None


def grade_in_sandbox(exercise_id: str, source: str, language: str, *,
                     on_check: Callable[[dict], None] = lambda _: None,
                     limits: Limits | None = None,
                     hidden: tuple[Path | str, ...] = (),
                     databases: GradingDatabases | None = None,
                     without_limits: bool = False) -> GradingOutcome:
    """Grade ``source`` as exercise ``exercise_id`` in the sandbox, calling ``on_check``
    with each check's dict as it completes. ``hidden``: folders the grading must not see
    besides the usual ones (the control's runtime folder, when it is not the project's
    ``.lockshop``). ``databases``: the room's MariaDB, where an exercise graded on it gets
    a database of its own (without it, such an exercise is not graded).
    ``without_limits``: the room was opened with ``--room-without-limits``; a grading
    whose cgroup cannot be made then runs without its memory, process and total CPU time
    limits, and its message says so (else it is not graded, and says why).
    ``KeyError`` for an unknown exercise."""
    exercise = registry.find(exercise_id)
    limits = limits or Limits()
    with speaking(language):
        if len(source.encode("utf-8", "replace")) > MAX_SOURCE_BYTES:
            return GradingOutcome(None, message=_(
                "not graded: your code is over %(size)s", size=sandbox.size(MAX_SOURCE_BYTES)))
        report = _Report(on_check, [check.lesson for check in exercise.checks()],
                         exercise.id)
        mounts: list[tuple[Path | str, str]] = []
        command = [sys.executable, "-m", "lockshop.room.inside", exercise.id,
                   f"{SUBMISSION}/{exercise.file}", "--lang", language]
        # Where the student's lock runs in a process of its own, the grader runs as a user
        # of its own and starts that process as nobody.
        grader_user = sandbox.GRADER if out_of_process(exercise) else None
        if grader_user is not None:
            command += ["--student-user", str(sandbox.NOBODY)]
        with ExitStack() as own_database:
            if exercise.backend in BACKENDS:
                if databases is None:
                    return GradingOutcome(None, message=_(
                        "not graded: exercise %(id)s is graded on MariaDB, and this grading "
                        "has no database server", id=exercise.id))
                try:
                    account = own_database.enter_context(databases.account())
                except StartError as error:
                    LOGGER.error("the room's MariaDB: %s", error)
                    return GradingOutcome(None, message=_(
                        "not graded: the room's database server did not start (%(error)s)",
                        error=error))
                mounts.append((account.socket_folder, INSIDE_SOCKET_FOLDER))
                # A file, not the command line: the host's ps shows every user the
                # sandbox's arguments, and this one holds the grading user's password.
                command += ["--database-file", f"{SUBMISSION}/{DATABASE_FILE}"]
            ran = _run(exercise, source, command, mounts, limits, hidden, report,
                       database_url=account.url if exercise.backend in BACKENDS else None,
                       grader_user=grader_user, without_limits=without_limits)
        if isinstance(ran, GradingOutcome):
            return ran
        outcome = report.outcome(ran, limits, exercise.id)
        outcome.usage = ran.usage
        if ran.unenforced is not None:
            # Whoever reads the result must know what it was not held to.
            outcome.message = _one_line(outcome.message + " " + _(
                "(graded WITHOUT its memory, process and total CPU time limits: "
                "%(why)s)", why=ran.unenforced))
        if ran.unwalled is not None:
            # Without the wall a lock could go round the grader's ZooKeeper proxy and hide
            # its watches from the checks that count them: the verdict is weaker, say so.
            outcome.message = _one_line(outcome.message + " " + _(
                "(graded WITHOUT the wall that keeps your code off the grader's own "
                "servers: %(why)s)", why=ran.unwalled))
        return outcome


def _run(exercise: registry.Exercise, source: str, command: list[str],
         mounts: list[tuple[Path | str, str]], limits: Limits,
         hidden: tuple[Path | str, ...], report: _Report,
         database_url: str | None = None, grader_user: int | None = None,
         without_limits: bool = False) -> sandbox.SandboxRun | GradingOutcome:
    """The grading in the sandbox, the student's file in a folder of its own (removed after),
    and beside it, for a grading on the room's MariaDB, the URL of its database."""
    folder = Path(tempfile.mkdtemp(prefix="lockshop-grading-"))  # root's, closed (0700)
    try:
        submission = folder / "submission"
        submission.mkdir(mode=0o755)
        written = {exercise.file: source}
        if database_url is not None:
            written[DATABASE_FILE] = database_url
        for name, text in written.items():
            (submission / name).write_text(text, encoding="utf-8")
            (submission / name).chmod(0o644)  # for nobody, inside; the folder keeps others out
        view = sandbox.python_view(hidden=hidden,
                                   mounts=[(submission, SUBMISSION), *mounts])
        try:
            return sandbox.run(command, limits, view, on_report=report.line,
                               max_line=MAX_LINE, grader_user=grader_user,
                               without_limits=without_limits)
        except sandbox.SandboxUnavailable as error:
            LOGGER.error("sandbox: %s", error)
            return GradingOutcome(None, message=_(
                "not graded: the grading sandbox is missing on the instructor's machine "
                "(%(error)s)", error=error))
        except sandbox.LimitsUnavailable as error:
            LOGGER.error("sandbox: a grading was refused, its limits could not be set: %s",
                         error)
            return GradingOutcome(None, message=_one_line(_(
                "not graded: the instructor's machine could not set this grading's memory, "
                "process and total CPU time limits (%(error)s)", error=error)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class _Report:
    """The lines ``inside`` sent, believed only as far as they are well formed."""

    def __init__(self, on_check: Callable[[dict], None], lessons: list[str],
                 exercise: str) -> None:
        self.on_check = on_check
        #: The exercise's checks' lessons, in the order the grader runs them.
        self.lessons = lessons
        self.exercise = exercise
        self.results: list[CheckResult] = []
        #: The round as its verdict summed it up (None until a verdict agreeing with the
        #: checks before it came).
        self.graded: Grade | None = None
        self.load_error: str | None = None

    def line(self, raw: bytes) -> None:
        if self.graded is not None or self.load_error is not None:
            return  # nothing counts after the last word
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return
        if not isinstance(record, dict):
            return
        if check := CheckResult.from_record(record, max_text=MAX_FIELD):
            if len(self.results) >= len(self.lessons) or \
                    check.lesson != self.lessons[len(self.results)]:
                return  # not the check the grader runs next
            self.results.append(check)
            self.on_check(check.record())
        elif set(record) == {"verdict"}:
            self.graded = Grade.from_records(self.exercise, self.results, record["verdict"],
                                             max_text=MAX_FIELD)
        elif set(record) == {"load_error"} and isinstance(record["load_error"], str):
            self.load_error = _one_line(record["load_error"])

    @property
    def checks(self) -> list[dict]:
        return [check.record() for check in self.results]

    def outcome(self, ran: sandbox.SandboxRun, limits: Limits, exercise: str) -> GradingOutcome:
        if ran.limit is not None:
            return GradingOutcome(None, self.checks, sandbox.limit_message(ran.limit, limits),
                                  ran.limit)
        if self.load_error is not None:
            return GradingOutcome(None, self.checks, _one_line(
                _("your code did not load: %(error)s", error=self.load_error)))
        graded = self.graded
        if graded is None or not self.results:
            said = [line for line in ran.output_tail.splitlines() if line.strip()]
            return GradingOutcome(None, self.checks, _one_line(_(
                "the grading stopped before its verdict (exit status %(status)s): %(said)s",
                status=ran.returncode, said=said[-1][:300] if said else _("nothing said"))))
        # A pass needs every one of the exercise's checks, each in its place.
        complete = len(self.results) == len(self.lessons)
        if not complete and graded.first_failed is None:
            return GradingOutcome(False, self.checks,
                                  _one_line(graded.incomplete_line(len(self.lessons))))
        return GradingOutcome(graded.passed and complete, self.checks,
                              _one_line(graded.verdict_line()))


def _one_line(text: str) -> str:
    return " ".join(text.split())[:1000]
