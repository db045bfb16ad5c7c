"""Grading a student's lock: run an exercise's checks, say each, keep the results.

Every check says what the grader does, what a right lock shows and what this
one showed, then ✓ or ✗; a ✗ names the lesson it breaks, its articles, and a
hint the student can act on. A check that raises, or hangs past
``grading.CHECK_SECONDS``, fails with what happened; the grader's servers are stopped
whatever happens. A skeleton's TODO still in place fails with its own words.

When a known mistake explains a failed check (``diagnoses``: a probe of the grader's
own shows it), the check says why, its hint is the mistake's, and the verdict's first
broken lesson is the mistake's. A check whose lesson does not apply to the lock
(``grading.NotApplicable``) is marked "–" and counts as neither passed nor failed.
"""

from __future__ import annotations

import ast
import shutil
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from locks.custom import LockClassError, factory_for, load_lock_class, split_spec
from lockshop.invoked import lockshop_command
from lockshop.exercises import Exercise
from lockshop.exercises import grading as limits
from lockshop.exercises.diagnoses import Diagnostician
from lockshop.exercises.grading import Check, Grading, NotApplicable
from shop.i18n import _, join
from shop.i18n.lock_errors import BACKENDS, say_reason


@dataclass
class CheckResult:
    lesson: str
    action: str
    expected: str
    observed: str
    passed: bool
    hint: str
    articles: tuple[str, ...] = ()
    lesson_title: str = ""
    seconds: float = 0.0
    #: The skeleton's TODO that is still there, in its own words.
    todo: str | None = None
    #: False when the check's lesson does not apply to this lock: neither ✓ nor ✗.
    applies: bool = True
    #: "passed", "failed" or "not applicable": what the mark says, for readers of JSON.
    status: str = ""
    #: A known mistake that explains the failure (``diagnoses``): its lesson, what the
    #: grader saw that shows it, and that lesson's title and articles.
    cause: str | None = None
    diagnosis: str = ""
    cause_title: str = ""
    cause_articles: tuple[str, ...] = ()

    @property
    def broken_lesson(self) -> str:
        """The lesson to study: the cause when one is known, else the check's own."""
        return self.cause or self.lesson

    @property
    def failed(self) -> bool:
        return self.applies and not self.passed


@dataclass
class Grade:
    exercise: str
    lock: str  # FILE:Class
    results: list[CheckResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        """Every check that applies passed (one that does not apply counts as neither)."""
        return any(r.applies for r in self.results) and not any(r.failed for r in self.results)

    @property
    def first_failed(self) -> CheckResult | None:
        return next((r for r in self.results if r.failed), None)

    @property
    def lesson(self) -> str | None:
        """The first broken lesson: the first failed check's cause, or its own lesson."""
        return self.first_failed.broken_lesson if self.first_failed else None

    def as_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed, "lesson": self.lesson}


def resolve(spec: str, exercise: Exercise) -> tuple[type, str]:
    """The student's class and a spec other processes can load (an absolute path);
    ``LockClassError`` when it cannot be had or is of the wrong family."""
    lock_class = load_lock_class(spec)
    target, class_name = split_spec(spec)
    if target.endswith(".py") or "/" in target or Path(target).exists():
        target = str(Path(target).resolve())
    requires = factory_for(lock_class)[1]
    if requires != (limits.server_of(exercise.family),):
        raise LockClassError(_(
            "%(target)s: %(name)s is a %(family)s lock; exercise %(id)s is a %(wanted)s "
            "exercise (start from its skeleton: %(lockshop)s exercise start %(id)s)",
            target=target, name=lock_class.__name__, family=requires[0], id=exercise.id,
            wanted=limits.server_of(exercise.family), lockshop=lockshop_command()))
    return lock_class, f"{target}:{class_name or lock_class.__name__}"


def grade(exercise: Exercise, spec: str, *, say: Callable[[str], None] = lambda _: None,
          sale: bool = True,
          on_result: Callable[[CheckResult], None] = lambda _: None) -> Grade:
    """Run ``exercise``'s checks on the lock ``spec`` names, on servers of the grader's own
    (without the sale across shop instances, the slow one, when ``sale`` is false).
    ``on_result`` is given each check's result as soon as it is known (the room streams
    them to the student's browser)."""
    lock_class, spec = resolve(spec, exercise)
    result = Grade(exercise.id, spec)
    started = time.monotonic()
    runtime = Path(tempfile.mkdtemp(prefix=f"lockshop-exercise-{exercise.id}-"))
    try:
        with Grading(lock_class, spec, exercise.family, runtime) as grading:
            say(_("exercise %(id)s: %(title)s", id=exercise.id, title=exercise.title))
            if grading.redis_servers:
                say("  " + _("your lock: %(spec)s, on %(count)s Redis servers of the grader's "
                             "own", spec=spec, count=len(grading.redis_servers)))
            else:
                say("  " + _("your lock: %(spec)s, on a %(family)s server of the grader's own",
                             spec=spec, family=say_reason(grading.server, BACKENDS)))
            for line, todo in todos_left(Path(spec.rpartition(":")[0])):
                say("  " + _("TODO left (line %(line)s): %(todo)s", line=line, todo=todo))
            todos = todos_left(Path(spec.rpartition(":")[0]))
            diagnostician = Diagnostician(grading, int(exercise.id))
            for check in exercise.checks():
                if check.sale and not sale:
                    continue
                if check.sale and todos:
                    # Three shop instances cannot sell with a lock whose TODOs are left:
                    # say so at once rather than after the slowest check of all.
                    outcome = skipped_for_todos(check, len(todos))
                    result.results.append(outcome)
                    on_result(outcome)
                    for line in describe(outcome):
                        say(line)
                    continue
                outcome = run_check(check, grading, source=Path(spec.rpartition(':')[0]))
                # A hung lock would hang the probes too; a TODO is its own explanation.
                hung = outcome.seconds >= limits.CHECK_SECONDS
                if outcome.failed and outcome.todo is None and not hung:
                    explain(outcome, diagnostician)
                result.results.append(outcome)
                on_result(outcome)
                for line in describe(outcome):
                    say(line)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
        result.seconds = round(time.monotonic() - started, 1)
    return result


def explain(result: CheckResult, diagnostician: Diagnostician) -> None:
    """A failed check that a known mistake explains says so, and takes the mistake's hint."""
    from lockshop.workshop.labs import LABS
    found = diagnostician.cause_of(result.lesson)
    if found is None:
        return
    row, evidence = found
    lab = LABS.get(row.lesson)
    result.cause = row.lesson
    result.diagnosis = _(row.says, lesson=row.lesson, evidence=evidence)
    result.hint = _(row.hint)
    result.cause_title = _(lab.title) if lab else ""
    result.cause_articles = lab.articles if lab else ()


def skipped_for_todos(check: Check, count: int) -> CheckResult:
    """The sale, not run: the lock still has ``count`` TODOs."""
    from lockshop.workshop.labs import LABS
    lab = LABS.get(check.lesson)
    return CheckResult(check.lesson, str(check.action), str(check.expected),
                       _("not run: %(count)s TODOs are left in your file", count=count), False,
                       _("Not run: write your lock's TODOs first, then check again."),
                       lab.articles if lab else (), _(lab.title) if lab else "",
                       status="failed")


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
    from lockshop.workshop.labs import LABS
    lab = LABS.get(check.lesson)
    result = CheckResult(check.lesson, str(check.action), str(check.expected), "", False,
                         str(check.hint), lab.articles if lab else (),
                         _(lab.title) if lab else "")
    answer: list = []

    def body() -> None:
        try:
            answer.append(("ok", check.run(grading)))
        except BaseException as error:  # noqa: BLE001 - the student's code may raise anything
            answer.append(("error", error))

    started = time.monotonic()
    worker = threading.Thread(target=body, daemon=True, name=f"check {check.lesson}")
    worker.start()
    worker.join(limits.CHECK_SECONDS)
    result.seconds = round(time.monotonic() - started, 2)
    result.status = "failed"
    if not answer:
        result.observed = _("did not finish in %(seconds)s s: an acquire or a release that "
                            "never returns?", seconds=f"{limits.CHECK_SECONDS:g}")
        return result
    kind, value = answer[0]
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
        result.observed = _("your lock raised %(error)s: %(message)s%(where)s",
                            error=type(value).__name__, message=value,
                            where=_where(value, source))
    result.status = "not applicable" if not result.applies else \
        "passed" if result.passed else "failed"
    return result


def _where(error: BaseException, source: Path) -> str:
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if Path(f.filename).name == source.name]
    return _(" (%(file)s, line %(line)s)", file=frames[-1].filename, line=frames[-1].lineno) \
        if frames else ""


#: The mark of a check that does not apply: neither ✓ nor ✗.
NOT_APPLICABLE_MARK = "–"


def mark(result: CheckResult) -> str:
    return NOT_APPLICABLE_MARK if not result.applies else "✓" if result.passed else "✗"


def describe(result: CheckResult) -> list[str]:
    indent = " " * 9
    lines = [f"  {mark(result)} {result.lesson}  {result.action}",
             indent + _("expected: %(expected)s", expected=result.expected),
             indent + _("observed: %(observed)s  (%(seconds)s s)", observed=result.observed,
                        seconds=f"{result.seconds:g}")]
    if not result.applies:
        lines.append(indent + _("does not apply: %(hint)s", hint=result.hint))
    elif not result.passed:
        if result.cause:
            lines.append(indent + _("why: %(diagnosis)s", diagnosis=result.diagnosis))
        articles = result.cause_articles if result.cause else result.articles
        articles = _(" (%(articles)s)", articles=join(articles)) if articles else ""
        lines.append(indent + _("lesson %(lesson)s%(articles)s: %(title)s",
                                lesson=result.broken_lesson, articles=articles,
                                title=result.cause_title if result.cause else result.lesson_title))
        lines.append(indent + _("hint: %(hint)s", hint=result.hint))
    return lines


def summary(grade_: Grade) -> str:
    passed = sum(r.passed for r in grade_.results if r.applies)
    counted = sum(r.applies for r in grade_.results)
    aside = sum(not r.applies for r in grade_.results)
    aside = _("; %(count)s does not apply", count=aside) if aside else ""
    if grade_.passed:
        return "  => " + _("exercise %(id)s passed: %(passed)s of %(checks)s checks%(aside)s "
                           "(%(seconds)s s)", id=grade_.exercise, passed=passed,
                           checks=counted, aside=aside, seconds=f"{grade_.seconds:g}")
    todos = todos_left(Path(grade_.lock.rpartition(":")[0]))
    left = _("; TODOs left: %(count)s", count=len(todos)) if todos else ""
    return "  => " + _("exercise %(id)s not passed: %(passed)s of %(checks)s checks%(aside)s; "
                       "first broken lesson %(lesson)s%(left)s (%(seconds)s s)",
                       id=grade_.exercise, passed=passed, checks=counted, aside=aside,
                       lesson=grade_.lesson, left=left, seconds=f"{grade_.seconds:g}")


@dataclass
class Verdict:
    """The verdict of every round of ``--repeat``: passed only if every round passed."""

    rounds: int
    rounds_passed: int
    #: The first broken lesson of the first round that failed (None when all passed).
    lesson: str | None

    @property
    def passed(self) -> bool:
        return self.rounds_passed == self.rounds

    def as_dict(self) -> dict:
        return {"passed": self.passed, "rounds_total": self.rounds,
                "rounds_passed": self.rounds_passed, "lesson": self.lesson}


def verdict(grades: list[Grade]) -> Verdict:
    failed = [g for g in grades if not g.passed]
    return Verdict(len(grades), len(grades) - len(failed), failed[0].lesson if failed else None)


def check_passed_every_round(grades: list[Grade], index: int) -> bool | None:
    """Whether the ``index``-th check passed in every round; None when it never applied."""
    rounds = [g.results[index] for g in grades if index < len(g.results)]
    if not any(r.applies for r in rounds):
        return None
    return not any(r.failed for r in rounds) and len(rounds) == len(grades)


def gradescope(grades: list[Grade]) -> dict:
    """Gradescope's results.json: one test per check, a point each when it passed every
    round."""
    names = [(r.lesson, r.action) for r in grades[0].results]
    tests = []
    for index, (lesson, action) in enumerate(names):
        rounds = [g.results[index] for g in grades if index < len(g.results)]
        passed = check_passed_every_round(grades, index)
        shown = next((r for r in rounds if r.failed), rounds[-1])
        output = (f"expected: {shown.expected}\nobserved: {shown.observed}\n"
                  f"passed {sum(r.passed for r in rounds)} of {len(grades)} rounds")
        if passed is None:  # does not apply: worth nothing either way
            tests.append({"name": f"{lesson} {action}", "score": 0, "max_score": 0,
                          "output": f"{output}\ndoes not apply: {shown.hint}"})
            continue
        if not passed:
            if shown.cause:
                output += f"\nwhy: {shown.diagnosis}"
            title = shown.cause_title if shown.cause else shown.lesson_title
            output += f"\nlesson {shown.broken_lesson}: {title}\nhint: {shown.hint}"
        tests.append({"name": f"{lesson} {action}", "score": 1 if passed else 0,
                      "max_score": 1, "status": "passed" if passed else "failed",
                      "output": output})
    overall = verdict(grades)
    said = "passed" if overall.passed else f"not passed; first broken lesson {overall.lesson}"
    return {"score": sum(t["score"] for t in tests),
            "max_score": sum(t["max_score"] for t in tests),
            "tests": tests, "visibility": "visible",
            "output": (f"exercise {grades[0].exercise}, {grades[0].lock}: {said} "
                       f"({overall.rounds_passed} of {overall.rounds} rounds passed)")}
