"""Every form a grade takes, in one place: the text, the JSON, Gradescope's results.json,
the room board's post, the tally over ``--repeat`` rounds, and the room's lines.

``CheckResult`` is one check's outcome, ``Grade`` one round of an exercise's checks,
``Rounds`` every round of one ``exercise check`` (one, or ``--repeat N``): a check
counts as passed only if it passed in every round (9 of 10 is a fail). The rounds are
lined up check by check in one place (``Rounds.by_check``), and every form over rounds
reads that.

The room's grading sends each check as one JSON line from inside its sandbox
(``CheckResult.record``) and reads it back as untrusted text (``CheckResult.from_record``):
both ends of that line are here, as is the one line the room says of the outcome
(``Grade.room_message``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from shop.i18n import _, join

#: The mark of a check that does not apply: neither ✓ nor ✗.
NOT_APPLICABLE_MARK = "–"
#: The fields of a check as the room sends, keeps and shows it, in this order.
RECORD_FIELDS = ("lesson", "passed", "action", "expected", "observed", "hint", "lesson_title")
_RECORD_TEXTS = ("action", "expected", "observed", "hint", "lesson_title")


_LESSON = re.compile(r"^C\d{2}$")


def is_lesson(value: object) -> bool:
    """Whether ``value`` (untrusted) is a lesson's id: "C11"."""
    return isinstance(value, str) and bool(_LESSON.match(value))


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
        """The check as one line of the room's report (``lockshop.room.inside``)."""
        return {"lesson": self.lesson, "passed": bool(self.passed), "action": self.action,
                "expected": self.expected, "observed": self.observed, "hint": self.hint,
                "lesson_title": self.lesson_title}

    @classmethod
    def from_record(cls, record: dict, *, max_text: int) -> CheckResult | None:
        """A line of the room's report as a check, if it is exactly one (untrusted: its
        texts cut to ``max_text``); None otherwise."""
        if set(record) != set(RECORD_FIELDS):
            return None
        if not is_lesson(record["lesson"]) or not isinstance(record["passed"], bool):
            return None
        if not all(isinstance(record[name], str) for name in _RECORD_TEXTS):
            return None
        texts = {name: record[name][:max_text] for name in _RECORD_TEXTS}
        return cls(record["lesson"], texts["action"], texts["expected"], texts["observed"],
                   record["passed"], texts["hint"], lesson_title=texts["lesson_title"],
                   status="passed" if record["passed"] else "failed")


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
    def lesson(self) -> str | None:
        """The first broken lesson: the first failed check's cause, or its own lesson."""
        return self.first_failed.broken_lesson if self.first_failed else None

    def as_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed, "lesson": self.lesson}

    def summary(self) -> str:
        """The round's verdict in one line, as the command line prints it."""
        passed = sum(r.passed for r in self.results if r.applies)
        counted = sum(r.applies for r in self.results)
        aside = sum(not r.applies for r in self.results)
        aside = _("; %(count)s does not apply", count=aside) if aside else ""
        if self.passed:
            return "  => " + _("exercise %(id)s passed: %(passed)s of %(checks)s "
                               "checks%(aside)s (%(seconds)s s)", id=self.exercise,
                               passed=passed, checks=counted, aside=aside,
                               seconds=f"{self.seconds:g}")
        left = _("; TODOs left: %(count)s", count=len(self.todos)) if self.todos else ""
        return "  => " + _("exercise %(id)s not passed: %(passed)s of %(checks)s "
                           "checks%(aside)s; first broken lesson %(lesson)s%(left)s "
                           "(%(seconds)s s)", id=self.exercise, passed=passed,
                           checks=counted, aside=aside, lesson=self.lesson, left=left,
                           seconds=f"{self.seconds:g}")

    def verdict_record(self) -> dict:
        """The round's verdict as the last line of the room's report: the first failed
        check's own lesson (the room names what its checks show, not a diagnosed cause)."""
        failed = self.first_failed
        return {"verdict": {"passed": self.passed, "lesson": failed.lesson if failed else None}}

    def room_message(self, *, passed: bool, checks_expected: int) -> str:
        """The verdict as the room says it in one line: ``passed`` as the room believed it
        (the grader said so, and every one of the exercise's ``checks_expected`` checks
        came, and passed)."""
        count = sum(r.passed for r in self.results)
        if passed:
            return _("exercise %(id)s passed: %(passed)s of %(checks)s checks",
                     id=self.exercise, passed=count, checks=len(self.results))
        failed = self.first_failed
        if failed is None:
            return _("exercise %(id)s not passed: only %(reported)s of its %(checks)s "
                     "checks reported", id=self.exercise, reported=len(self.results),
                     checks=checks_expected)
        return _("exercise %(id)s not passed: %(passed)s of %(checks)s checks; first "
                 "broken lesson %(lesson)s: %(title)s", id=self.exercise, passed=count,
                 checks=len(self.results), lesson=failed.lesson,
                 title=failed.lesson_title or "")


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
    def lesson(self) -> str | None:
        """The first broken lesson of the first round that failed (None when all passed)."""
        return next((g.lesson for g in self.grades if not g.passed), None)

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
                           lesson=self.lesson)

    # --- records ------------------------------------------------------------------------------

    def verdict(self) -> dict:
        return {"passed": self.passed, "rounds_total": self.total,
                "rounds_passed": self.passed_count, "lesson": self.lesson}

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
        said = "passed" if self.passed else f"not passed; first broken lesson {self.lesson}"
        return {"score": sum(t["score"] for t in tests),
                "max_score": sum(t["max_score"] for t in tests),
                "tests": tests, "visibility": "visible",
                "output": (f"exercise {self.exercise}, {self.lock}: {said} "
                           f"({self.passed_count} of {self.total} rounds passed)")}

    def board_post(self, name: str) -> dict:
        """What ``exercise check --report`` posts to the room board: a check counts as
        passed only if it passed in every round."""
        return {"name": name, "exercise": self.exercise, "passed": self.passed,
                "lesson": self.lesson, "rounds_total": self.total,
                "rounds_passed": self.passed_count,
                "checks": [{"lesson": check.first.lesson, "action": check.first.action,
                            "passed": check.passed_every_round, "applies": check.applies}
                           for check in self.by_check()]}
