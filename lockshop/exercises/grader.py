"""Grading a student's lock: run an exercise's checks, say each, keep the results
(``results``: every form a grade takes).

Every check says what the grader does, what a right lock shows and what this
one showed, then ✓ or ✗; a ✗ names the lesson it breaks, its articles, and a
hint the student can act on. A check that raises, or hangs past
``grading.CHECK_SECONDS``, fails with what happened; the grader's servers are stopped
whatever happens. A skeleton's TODO still in place fails with its own words.

When a known mistake explains a failed check (``diagnoses``: a probe of the grader's
own shows it), the check says why, its hint is the mistake's, and the verdict's first
broken lesson is the mistake's. A check whose lesson does not apply to the lock
(``grading.NotApplicable``) is marked "–" and counts as neither passed nor failed.

A Redis, Redlock or ZooKeeper lock, a leader election, a lock table's lock, a job guard
and an order step (``out_of_process``: every exercise, 1 to 22) are never loaded here:
each is loaded, and runs, in a host of its own (``remote_locks``, ``lock_host``; a job
guard's runs are the grader's, here, and call their guard there: ``remote_guards``; an
order step's host: ``remote_steps``, ``step_host``), which says what it found; what was
found wrong with the file comes back as the same one line. An order step runs there on
the grading's database, its business delay a call back to the grader's barriers, and the
checks read what it did from the database.
"""

from __future__ import annotations

import ast
import contextlib
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from locks import LockError
from locks.custom import (
    LockClassError,
    absolute_target,
    factory_for,
    load_election_class,
    load_lock_class,
    split_spec,
)
from lockshop.exercises import databases
from lockshop.exercises import grading as limits
from lockshop.exercises.diagnoses import Diagnostician
from lockshop.exercises.grading import Background, Check, Grading, NotApplicable
from lockshop.exercises.registry import ELECTION, JOB_GUARD, LOCK, ORDER_STEP, Exercise
from lockshop.exercises import remote_locks, remote_steps
from lockshop.exercises.remote_locks import LockHost
from lockshop.exercises.results import CheckResult, Grade
from lockshop.invoked import lockshop_command
from shop.i18n import _
from shop.i18n.lock_errors import BACKENDS, say_lock_error, say_reason
from shop.jobs.custom import load_guard_class
from shop.orders.custom_steps import OrderStep, load_order_step


def resolve(spec: str, exercise: Exercise) -> tuple[type, str]:
    """What the student wrote (``exercise.writes``: the lock class, the job guard class,
    the order step or the election's class) and a spec other processes can load (an
    absolute path); ``LockClassError`` when it cannot be had, or is a lock on the base of
    another backend."""
    if exercise.writes == ORDER_STEP:
        return resolve_step(spec)
    target, class_name = split_spec(spec)
    target = absolute_target(target)
    if exercise.writes == JOB_GUARD:
        written = load_guard_class(spec)
    elif exercise.writes == ELECTION:  # a Candidate, run as the shop runs it
        written = load_election_class(spec)
    else:
        written = load_lock_class(spec)
        requires = factory_for(written)[1]
        if requires != (exercise.lock_family,):
            raise wrong_family(target, written.__name__, requires[0], exercise)
    return written, f"{target}:{class_name or written.__name__}"


def wrong_family(target: str, name: str, family: str, exercise: Exercise) -> LockClassError:
    """The student's lock is of another family than the exercise's (said by the grader
    or by the lock host)."""
    return LockClassError(_(
        "%(target)s: %(name)s is a %(family)s lock; exercise %(id)s is a %(wanted)s "
        "exercise (start from its skeleton: %(lockshop)s exercise start %(id)s)",
        target=target, name=name, family=say_reason(family, BACKENDS), id=exercise.id,
        wanted=say_reason(exercise.lock_family, BACKENDS), lockshop=lockshop_command()))


#: The backends whose lock exercises are graded with the lock in a process of its own
#: (``remote_locks``); the others' still load the student's class into the grader.
#: ZooKeeper's (7, 8, 12, 13): each factory through a proxy of the grader's, which reads
#: its session and its children's watches off the wire (``Grading.session_of``).
#: SQLite's is the lock table's (17): its file is the student's user's to write too, and
#: the grader reads the rows there (``databases.students_file``).
OUT_OF_PROCESS_BACKENDS = ("redis", "redlock", "zookeeper", "sqlite")
#: The leader elections graded the same way, by backend: ZooKeeper's (14), each
#: candidate's session through a proxy of the grader's, as a ZooKeeper lock's factory.
OUT_OF_PROCESS_ELECTIONS = ("zookeeper",)
#: The job guards graded the same way, by backend (``remote_guards``): Redis's (15, 16),
#: on a SQLite file of the guard's own beside the grader's; MariaDB's (22), on the
#: grading's database.
OUT_OF_PROCESS_GUARDS = ("redis", "mysql")
#: The order steps graded the same way, by backend (``remote_steps``): SQLite's (19, 20,
#: 21), each check's database a file the student's user can write too; MariaDB's (18),
#: the grading's database, whose lock waits the grader reads from InnoDB.
OUT_OF_PROCESS_STEPS = ("sqlite", "mysql")


def out_of_process(exercise: Exercise) -> bool:
    """Whether ``exercise`` runs the student's code in a lock host, never in the grader."""
    if exercise.writes == ELECTION:
        return exercise.backend in OUT_OF_PROCESS_ELECTIONS
    if exercise.writes == JOB_GUARD:
        return exercise.backend in OUT_OF_PROCESS_GUARDS
    if exercise.writes == ORDER_STEP:
        return exercise.backend in OUT_OF_PROCESS_STEPS
    return exercise.writes == LOCK and exercise.backend in OUT_OF_PROCESS_BACKENDS


def start_host(spec: str, exercise: Exercise) -> tuple[LockHost, str]:
    """The student's lock class (or election class, job guard class or order step) loaded
    in a process of its own, and a spec other processes can load; ``LockClassError`` as
    ``resolve`` raises it, said by the host."""
    target, class_name = split_spec(spec)
    target = absolute_target(target)
    if exercise.writes == ORDER_STEP:  # no family: any step is an order step
        step_host = remote_steps.OrderStepHost(f"{target}:{class_name}" if class_name
                                               else target)
        return step_host, f"{target}:{class_name or step_host.class_name}"
    host = LockHost(f"{target}:{class_name}" if class_name else target,
                    election=exercise.writes == ELECTION, guard=exercise.writes == JOB_GUARD)
    if exercise.writes != JOB_GUARD and host.family != exercise.lock_family:
        host.close()
        raise wrong_family(target, host.class_name, host.family, exercise)
    return host, f"{target}:{class_name or host.class_name}"


def resolve_step(spec: str) -> tuple[OrderStep, str]:
    """The student's order step and a spec other processes can load (an absolute path,
    and the step's name); ``OrderStepError`` (a ``LockClassError``) when there is none."""
    step = load_order_step(spec)
    target, name = split_spec(spec)
    target = absolute_target(target)
    name = name or type(step).__name__
    return step, f"{target}:{name}"


def grade(exercise: Exercise, spec: str, *, say: Callable[[str], None] = lambda _: None,
          sale: bool = True,
          on_result: Callable[[CheckResult], None] = lambda _: None,
          database_url: str | None = None,
          host: tuple[LockHost, str] | None = None) -> Grade:
    """Run ``exercise``'s checks on the lock ``spec`` names, on servers of the grader's own
    (without the sale across shop instances, the slow one, when ``sale`` is false).
    ``on_result`` is given each check's result as soon as it is known (the room streams
    them to the student's browser). ``database_url``: the database to grade a database's
    exercise on, made for this grading (the room's); else the grader makes its own.
    ``host``: the lock host (and its spec) ``start_host`` started for ``spec``, kept by the
    caller across gradings (``--repeat``: the student's process lives for the whole
    command, as the grader's does); else one of its own, for this grading only."""
    with contextlib.ExitStack() as own:
        if host is None and out_of_process(exercise):
            host = start_host(spec, exercise)
            own.callback(host[0].close)  # whatever fails below, the student's process ends
        if host is not None:
            # An order step's checks call its place() as before: a stub of its host's.
            lock_class = remote_steps.RemoteStep(host[0]) \
                if exercise.writes == ORDER_STEP else None
            host, spec = host
        else:
            lock_class, spec = resolve(spec, exercise)
        source = Path(spec.rpartition(":")[0])  # the student's file (a module's name: no file)
        result = Grade(exercise.id, spec, todos=todos_left(source))
        started = time.monotonic()
        runtime = Path(tempfile.mkdtemp(prefix=f"lockshop-exercise-{exercise.id}-"))
        if host is not None and remote_locks.STUDENT_USER is not None:
            runtime.chmod(0o711)  # the student's shop instances reach their sale's folder only

        def keep(outcome: CheckResult) -> None:
            result.results.append(outcome)
            on_result(outcome)
            for line in outcome.lines():
                say(line)

        try:
            with Grading(lock_class, spec, exercise.backend, runtime,
                         database_url=database_url, host=host) as grading:
                say(_("exercise %(id)s: %(title)s", id=exercise.id, title=exercise.title))
                if grading.redis_servers:
                    say("  " + _("your lock: %(spec)s, on %(count)s Redis servers of the grader's "
                                 "own", spec=spec, count=len(grading.redis_servers)))
                elif exercise.writes == ORDER_STEP:  # no lock, and SQLite has no server
                    say("  " + _("your order step: %(spec)s, on a %(database)s database of the "
                                 "grader's own", spec=spec, database=exercise.backend))
                elif exercise.writes == ELECTION:
                    say("  " + _("your leader election: %(spec)s, on a %(family)s server of the "
                                 "grader's own", spec=spec, family=say_reason(exercise.backend,
                                                                              BACKENDS)))
                elif exercise.writes == JOB_GUARD and exercise.backend in databases.SERVERS:
                    say("  " + _("your job guard: %(spec)s, around the shop's jobs, on a "
                                 "%(database)s database of the grader's own", spec=spec,
                                 database=exercise.backend))
                elif exercise.writes == JOB_GUARD:
                    say("  " + _("your job guard: %(spec)s, around the shop's jobs, on a redis "
                                 "server of the grader's own", spec=spec))
                elif exercise.backend in databases.SERVERS:  # a lock table
                    say("  " + _("your lock: %(spec)s, on a %(database)s database of the grader's "
                                 "own", spec=spec, database=exercise.backend))
                else:
                    say("  " + _("your lock: %(spec)s, on a %(family)s server of the grader's own",
                                 spec=spec, family=say_reason(exercise.backend, BACKENDS)))
                for line, todo in result.todos:
                    say("  " + _("TODO left (line %(line)s): %(todo)s", line=line, todo=todo))
                diagnostician = Diagnostician(grading, exercise)
                for check in exercise.checks():
                    if check.sale and not sale:
                        continue
                    if check.sale and result.todos:
                        # Three shop instances cannot sell with a lock whose TODOs are left:
                        # say so at once rather than after the slowest check of all.
                        keep(skipped_for_todos(check, len(result.todos)))
                        continue
                    outcome = run_check(check, grading, source=source)
                    # A hung lock would hang the probes too; a TODO is its own explanation.
                    hung = outcome.seconds >= limits.CHECK_SECONDS
                    if outcome.failed and outcome.todo is None and not hung:
                        explain(outcome, diagnostician)
                    keep(outcome)
        finally:
            shutil.rmtree(runtime, ignore_errors=True)
            result.seconds = round(time.monotonic() - started, 1)
        return result


def _lesson(lesson: str) -> tuple[tuple[str, ...], str]:
    """A lesson's articles and title, in the reader's language (the workshop's labs)."""
    from lockshop.workshop.labs import LABS
    lab = LABS.get(lesson)
    return (lab.articles, _(lab.title)) if lab else ((), "")


def explain(result: CheckResult, diagnostician: Diagnostician) -> None:
    """A failed check that a known mistake explains says so, and takes the mistake's hint."""
    found = diagnostician.cause_of(result.lesson)
    if found is None:
        return
    row, evidence = found
    result.cause = row.lesson
    result.diagnosis = _(row.says, lesson=row.lesson, evidence=evidence)
    result.hint = _(row.hint)
    result.cause_articles, result.cause_title = _lesson(row.lesson)


def skipped_for_todos(check: Check, count: int) -> CheckResult:
    """The sale, not run: the lock still has ``count`` TODOs."""
    return CheckResult(check.lesson, str(check.action), str(check.expected),
                       _("not run: %(count)s TODOs are left in your file", count=count), False,
                       _("Not run: write your lock's TODOs first, then check again."),
                       *_lesson(check.lesson), status="failed")


def todos_left(source: Path) -> list[tuple[int, str]]:
    """The skeleton's TODOs still in the student's file: each ``raise
    NotImplementedError("TODO ...")``, with its line."""
    try:
        tree = ast.parse(source.read_text(), str(source))
    except (OSError, SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) \
                and getattr(node.exc.func, "id", "") == "NotImplementedError" and node.exc.args \
                and isinstance(node.exc.args[0], ast.Constant):
            found.append((node.lineno, str(node.exc.args[0].value)))
    return sorted(found)


def run_check(check: Check, grading: Grading, *, source: Path) -> CheckResult:
    """One check, bounded in time; what it showed, or what went wrong running it."""
    result = CheckResult(check.lesson, str(check.action), str(check.expected), "", False,
                         str(check.hint), *_lesson(check.lesson))
    started = time.monotonic()
    answer = Background(check.run, grading, name=f"check {check.lesson}").outcome(
        limits.CHECK_SECONDS)
    result.seconds = round(time.monotonic() - started, 2)
    result.status = "failed"
    if answer is None:
        result.observed = _("did not finish in %(seconds)s s: an acquire or a release that "
                            "never returns?", seconds=f"{limits.CHECK_SECONDS:g}")
        return result
    kind, value = answer
    if kind == "ok" and isinstance(value[1], NotApplicable):
        result.observed, result.applies = value[0], False
        result.hint = _("This check does not apply to your lock; lesson %(lesson)s is the one "
                        "it breaks: read that check.", lesson=value[1].see)
    elif kind == "ok":
        result.observed, result.passed = value[0], bool(value[1])
    elif isinstance(value, NotImplementedError):
        result.todo = str(value) or _("a method is not written yet")
        result.observed = _("not written yet: %(todo)s", todo=result.todo)
        # Nothing of the lesson ran, so the check's own hint (what went wrong) would mislead.
        result.hint = _("Nothing ran: your lock stopped at its TODO, which is still there. "
                        "Write that part first, then check again.")
    else:
        # A lock error's own text is the locks package's English: said in the reader's words.
        message = say_lock_error(value) if isinstance(value, LockError) else value
        result.observed = _("your lock raised %(error)s: %(message)s%(where)s",
                            error=type(value).__name__, message=message,
                            where=_where(value, source))
    result.status = "not applicable" if not result.applies else \
        "passed" if result.passed else "failed"
    return result


def _where(error: BaseException, source: Path) -> str:
    where = getattr(error, "where", None)  # said by the lock's own process
    if where is not None and Path(where[0]).name == source.name:
        return _(" (%(file)s, line %(line)s)", file=where[0], line=where[1])
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if Path(f.filename).name == source.name]
    return _(" (%(file)s, line %(line)s)", file=frames[-1].filename, line=frames[-1].lineno) \
        if frames else ""
