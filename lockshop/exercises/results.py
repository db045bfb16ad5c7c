"""Every form a grade takes, in one place: the text, the JSON, Gradescope's results.json,
the room board's post, the tally over ``--repeat`` rounds, and the record the room reads.

``CheckResult`` is one check's outcome, ``Grade`` one round of an exercise's checks,
``Rounds`` every round of one ``exercise check`` (one, or ``--repeat N``): a check
counts as passed only if it passed in every round (9 of 10 is a fail). The rounds are
lined up check by check in one place (``Rounds.by_check``), and every form over rounds
reads that.

Two lessons, two names: a check's ``lesson`` is the lesson its step stages; the
``broken_lesson`` is the lesson to study, the diagnosed cause when one is known, else
the first failed check's own lesson. The verdict says the second ("first broken lesson").

The record. A grading that runs apart from its reader (the room's, in a sandbox) writes
each check as one JSON object (``CheckResult.record``), then the verdict
(``Grade.verdict_record``); the reader takes them back as untrusted text
(``CheckResult.from_record``, ``Grade.from_records``). A record carries all a grade has
(whether the check applies, the diagnosis and its cause, the articles, the seconds; the
verdict's broken lesson, round count, TODOs left), so what is read back prints what the
command line printed, mark for mark. Reading back never believes more than a record's
shape: a field of the wrong type, or one it does not know, and the record is no check;
a field left out takes the value that claims least (it applies, no cause).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

from shop.i18n import _, join

#: The mark of a check that does not apply: neither ✓ nor ✗.
NOT_APPLICABLE_MARK = "–"
#: A check's record, field by field: what each holds, as the room keeps and shows it.
_RECORD_TEXTS = ("action", "expected", "observed", "hint", "lesson_title", "diagnosis",
                 "cause_title")
_RECORD_FLAGS = ("passed", "applies")
_RECORD_ARTICLES = ("articles", "cause_articles")
RECORD_FIELDS = ("lesson", "passed", "applies", "action", "expected", "observed", "seconds",
                 "hint", "lesson_title", "articles", "todo", "cause", "diagnosis",
                 "cause_title", "cause_articles")
#: The verdict's record (the last line of a grading's report), inside ``{"verdict": ...}``.
VERDICT_FIELDS = ("passed", "broken_lesson", "rounds_total", "rounds_passed", "seconds",
                  "todos")
#: An article's id ("A2"), and the most a record names.
_ARTICLE = re.compile(r"^A\d{1,2}$")
_MOST_ARTICLES = 10
#: The most TODOs a verdict's record lists.
_MOST_TODOS = 100

_LESSON = re.compile(r"^C\d{2}$")


def is_lesson(value: object) -> bool:
    """Whether ``value`` (untrusted) is a lesson's id: "C11"."""
    return isinstance(value, str) and bool(_LESSON.match(value))


def _is_articles(value: object) -> bool:
    return isinstance(value, list) and len(value) <= _MOST_ARTICLES and all(
        isinstance(item, str) and _ARTICLE.match(item) for item in value)


def _is_seconds(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and value >= 0


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
    def broken_title(self) -> str:
        return self.cause_title if self.cause else self.lesson_title

    @property
    def failed(self) -> bool:
        return self.applies and not self.passed

    @property
    def mark(self) -> str:
        return NOT_APPLICABLE_MARK if not self.applies else "✓" if self.passed else "✗"

    def lines(self) -> list[str]:
        """The check as the command line prints it: the mark, the lesson and the action,
        what was expected and observed, and for a ✗ why, the lesson and the hint."""
        indent = " " * 9
        lines = [f"  {self.mark} {self.lesson}  {self.action}",
                 indent + _("expected: %(expected)s", expected=self.expected),
                 indent + _("observed: %(observed)s  (%(seconds)s s)", observed=self.observed,
                            seconds=f"{self.seconds:g}")]
        if not self.applies:
            lines.append(indent + _("does not apply: %(hint)s", hint=self.hint))
        elif not self.passed:
            if self.cause:
                lines.append(indent + _("why: %(diagnosis)s", diagnosis=self.diagnosis))
            articles = self.cause_articles if self.cause else self.articles
            articles = _(" (%(articles)s)", articles=join(articles)) if articles else ""
            lines.append(indent + _("lesson %(lesson)s%(articles)s: %(title)s",
                                    lesson=self.broken_lesson, articles=articles,
                                    title=self.broken_title))
            lines.append(indent + _("hint: %(hint)s", hint=self.hint))
        return lines

    def record(self) -> dict:
        """The check as one JSON object: everything ``lines`` prints from, and nothing
        else (``status`` is the mark's, worked out again when it is read back)."""
        return {"lesson": self.lesson, "passed": bool(self.passed), "applies": self.applies,
                "action": self.action, "expected": self.expected, "observed": self.observed,
                "seconds": self.seconds, "hint": self.hint, "lesson_title": self.lesson_title,
                "articles": list(self.articles), "todo": self.todo, "cause": self.cause,
                "diagnosis": self.diagnosis, "cause_title": self.cause_title,
                "cause_articles": list(self.cause_articles)}

    @classmethod
    def from_record(cls, record: object, *, max_text: int) -> CheckResult | None:
        """A check's record read back, if it is one (untrusted: its texts cut to
        ``max_text``); None otherwise. Only ``lesson`` and ``passed`` must be there; a
        field left out takes the value that claims least."""
        if not isinstance(record, dict) or not set(record) <= set(RECORD_FIELDS):
            return None
        if not is_lesson(record.get("lesson")) or not isinstance(record.get("passed"), bool):
            return None
        if not all(isinstance(record.get(name, True), bool) for name in _RECORD_FLAGS):
            return None
        if not all(isinstance(record.get(name, ""), str) for name in _RECORD_TEXTS):
            return None
        if not all(_is_articles(record.get(name, [])) for name in _RECORD_ARTICLES):
            return None
        todo, cause = record.get("todo"), record.get("cause")
        if not (todo is None or isinstance(todo, str)) or \
                not (cause is None or is_lesson(cause)) or \
                not _is_seconds(record.get("seconds", 0.0)):
            return None
        texts = {name: record.get(name, "")[:max_text] for name in _RECORD_TEXTS}
        result = cls(record["lesson"], texts["action"], texts["expected"], texts["observed"],
                     record["passed"], texts["hint"], tuple(record.get("articles", ())),
                     texts["lesson_title"], float(record.get("seconds", 0.0)),
                     todo[:max_text] if todo is not None else None,
                     record.get("applies", True), cause=cause,
                     diagnosis=texts["diagnosis"], cause_title=texts["cause_title"],
                     cause_articles=tuple(record.get("cause_articles", ())))
        result.status = "not applicable" if not result.applies else \
            "passed" if result.passed else "failed"
        return result


@dataclass
class Grade:
    """One round of an exercise's checks on one lock."""

    exercise: str
    lock: str  # FILE:Class
    results: list[CheckResult] = field(default_factory=list)
    seconds: float = 0.0
    #: The skeleton's TODOs still in the student's file: (line, text).
    todos: list[tuple[int, str]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every check that applies passed (one that does not apply counts as neither)."""
        return any(r.applies for r in self.results) and not any(r.failed for r in self.results)

    @property
    def first_failed(self) -> CheckResult | None:
        return next((r for r in self.results if r.failed), None)

    @property
    def broken_lesson(self) -> str | None:
        """The first broken lesson: the first failed check's cause, or its own lesson."""
        return self.first_failed.broken_lesson if self.first_failed else None

    def as_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed, "broken_lesson": self.broken_lesson}

    def verdict_line(self) -> str:
        """The round's verdict in one line: what the command line prints after "=>", and
        what the room says of a grading."""
        passed = sum(r.passed for r in self.results if r.applies)
        counted = sum(r.applies for r in self.results)
        aside = sum(not r.applies for r in self.results)
        aside = _("; %(count)s does not apply", count=aside) if aside else ""
        if self.passed:
            return _("exercise %(id)s passed: %(passed)s of %(checks)s checks%(aside)s "
                     "(%(seconds)s s)", id=self.exercise, passed=passed, checks=counted,
                     aside=aside, seconds=f"{self.seconds:g}")
        left = _("; TODOs left: %(count)s", count=len(self.todos)) if self.todos else ""
        return _("exercise %(id)s not passed: %(passed)s of %(checks)s checks%(aside)s; "
                 "first broken lesson %(lesson)s%(left)s (%(seconds)s s)", id=self.exercise,
                 passed=passed, checks=counted, aside=aside, lesson=self.broken_lesson,
                 left=left, seconds=f"{self.seconds:g}")

    def summary(self) -> str:
        """The round's verdict in one line, as the command line prints it."""
        return "  => " + self.verdict_line()

    # --- the record -----------------------------------------------------------------------

    def verdict_record(self) -> dict:
        """The round's verdict as the last line of a grading's report (its checks' records
        came before it): what ``verdict_line`` says, and the round count."""
        return {"verdict": {"passed": self.passed, "broken_lesson": self.broken_lesson,
                            "rounds_total": 1, "rounds_passed": int(self.passed),
                            "seconds": self.seconds,
                            "todos": [[line, text] for line, text in self.todos]}}

    @classmethod
    def from_records(cls, exercise: str, checks: list[CheckResult], verdict: object, *,
                     max_text: int) -> Grade | None:
        """The round a grading reported: its checks (each read back by
        ``CheckResult.from_record``) and its verdict's record (the object inside
        ``{"verdict": ...}``, untrusted). None when the verdict is not one, or says other
        than its checks do."""
        if not isinstance(verdict, dict) or set(verdict) != set(VERDICT_FIELDS):
            return None
        passed, lesson, todos = verdict["passed"], verdict["broken_lesson"], verdict["todos"]
        if not isinstance(passed, bool) or not (lesson is None or is_lesson(lesson)) \
                or not _is_seconds(verdict["seconds"]) or verdict["rounds_total"] != 1 \
                or verdict["rounds_passed"] != int(passed) \
                or not isinstance(todos, list) or len(todos) > _MOST_TODOS:
            return None
        kept_todos = []
        for todo in todos:
            if not (isinstance(todo, list) and len(todo) == 2 and isinstance(todo[0], int)
                    and not isinstance(todo[0], bool) and isinstance(todo[1], str)):
                return None
            kept_todos.append((todo[0], todo[1][:max_text]))
        graded = cls(exercise, "", list(checks), float(verdict["seconds"]), kept_todos)
        if graded.passed != passed or graded.broken_lesson != lesson:
            return None  # a verdict must agree with the checks it sums up
        return graded

    def incomplete_line(self, checks_expected: int) -> str:
        """What the room says of a grading whose checks did not all come: not passed."""
        return _("exercise %(id)s not passed: only %(reported)s of its %(checks)s checks "
                 "reported", id=self.exercise, reported=len(self.results),
                 checks=checks_expected)


def read_checks(records: list, *, max_text: int) -> list[CheckResult]:
    """Every well-formed check record of ``records`` read back; the rest left out."""
    read = (CheckResult.from_record(record, max_text=max_text) for record in records)
    return [check for check in read if check is not None]


@dataclass(frozen=True)
class CheckOverRounds:
    """One check of the exercise, lined up over every round."""

    first: CheckResult  # as the first round ran it: its lesson and action
    rounds: tuple[CheckResult, ...]  # as every round that got that far ran it
    rounds_total: int

    @property
    def applies(self) -> bool:
        return any(r.applies for r in self.rounds)

    @property
    def passed_every_round(self) -> bool:
        """Passed in every round (and every round ran it); False when it never applied."""
        return self.applies and not any(r.failed for r in self.rounds) \
            and len(self.rounds) == self.rounds_total

    @property
    def times_passed(self) -> int:
        return sum(r.passed for r in self.rounds)

    @property
    def mark(self) -> str:
        return NOT_APPLICABLE_MARK if not self.applies else \
            "✓" if self.passed_every_round else "✗"

    @property
    def shown(self) -> CheckResult:
        """The round to show: the first that failed it, else the last."""
        return next((r for r in self.rounds if r.failed), self.rounds[-1])


@dataclass
class Rounds:
    """Every round of one ``exercise check``: passed only if every round passed."""

    grades: list[Grade]

    @property
    def exercise(self) -> str:
        return self.grades[0].exercise

    @property
    def lock(self) -> str:
        return self.grades[0].lock

    @property
    def total(self) -> int:
        return len(self.grades)

    @property
    def passed_count(self) -> int:
        return sum(g.passed for g in self.grades)

    @property
    def passed(self) -> bool:
        return self.passed_count == self.total

    @property
    def broken_lesson(self) -> str | None:
        """The first broken lesson of the first round that failed (None when all passed)."""
        return next((g.broken_lesson for g in self.grades if not g.passed), None)

    def by_check(self) -> list[CheckOverRounds]:
        """Each check of the first round, with that check in every round that ran it."""
        return [CheckOverRounds(first, tuple(g.results[index] for g in self.grades
                                             if index < len(g.results)), self.total)
                for index, first in enumerate(self.grades[0].results)]

    # --- text -------------------------------------------------------------------------------

    def tally(self) -> str:
        """Each check's passes over the rounds, one line each."""
        lines = ["  " + _("each check over %(rounds)s rounds:", rounds=self.total)]
        for check in self.by_check():
            lines.append(f"  {check.mark} {check.times_passed:>2}/{self.total}  "
                         f"{check.first.lesson}  {check.first.action}")
        return "\n".join(lines)

    def said(self) -> str:
        """The verdict of every round, in one line: 9 of 10 is a fail."""
        if self.passed:
            return "  => " + _("exercise %(id)s passed in all %(rounds)s rounds",
                               id=self.exercise, rounds=self.total)
        return "  => " + _("exercise %(id)s not passed: %(passed)s of %(rounds)s rounds "
                           "passed, and every round must; first broken lesson %(lesson)s",
                           id=self.exercise, passed=self.passed_count, rounds=self.total,
                           lesson=self.broken_lesson)

    # --- records ------------------------------------------------------------------------------

    def verdict(self) -> dict:
        return {"passed": self.passed, "rounds_total": self.total,
                "rounds_passed": self.passed_count, "broken_lesson": self.broken_lesson}

    def as_json(self) -> dict:
        """``exercise check --json``: the verdict over the rounds, and every round."""
        return {"exercise": self.exercise, "lock": self.lock, **self.verdict(),
                "rounds": [g.as_dict() for g in self.grades]}

    def gradescope(self) -> dict:
        """Gradescope's results.json: one test per check, a point each when it passed every
        round."""
        tests = []
        for check in self.by_check():
            shown = check.shown
            name = f"{check.first.lesson} {check.first.action}"
            output = (f"expected: {shown.expected}\nobserved: {shown.observed}\n"
                      f"passed {check.times_passed} of {self.total} rounds")
            if not check.applies:  # does not apply: worth nothing either way
                tests.append({"name": name, "score": 0, "max_score": 0,
                              "output": f"{output}\ndoes not apply: {shown.hint}"})
                continue
            passed = check.passed_every_round
            if not passed:
                if shown.cause:
                    output += f"\nwhy: {shown.diagnosis}"
                output += (f"\nlesson {shown.broken_lesson}: {shown.broken_title}\n"
                           f"hint: {shown.hint}")
            tests.append({"name": name, "score": 1 if passed else 0, "max_score": 1,
                          "status": "passed" if passed else "failed", "output": output})
        said = "passed" if self.passed else \
            f"not passed; first broken lesson {self.broken_lesson}"
        return {"score": sum(t["score"] for t in tests),
                "max_score": sum(t["max_score"] for t in tests),
                "tests": tests, "visibility": "visible",
                "output": (f"exercise {self.exercise}, {self.lock}: {said} "
                           f"({self.passed_count} of {self.total} rounds passed)")}

    def board_post(self, name: str) -> dict:
        """What ``exercise check --report`` posts to the room board: a check counts as
        passed only if it passed in every round."""
        return {"name": name, "exercise": self.exercise, "passed": self.passed,
                "broken_lesson": self.broken_lesson, "rounds_total": self.total,
                "rounds_passed": self.passed_count,
                "checks": [{"lesson": check.first.lesson, "action": check.first.action,
                            "passed": check.passed_every_round, "applies": check.applies}
                           for check in self.by_check()]}
