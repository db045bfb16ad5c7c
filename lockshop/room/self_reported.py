"""A result graded on a student's own machine, as ``exercise check --report`` posts it: the
one rule it is checked by.

``lockshop exercise check N FILE --report URL --room CODE --name NAME`` posts one
result (``Rounds.board_post``) to the instructor's ``lockshop up``. The control's door
caps the body (``MAX_BYTES``, 413 past it) and checks the room code; the room checks
the rest here, once, by the rules its own doors use: the name as a joining name is
checked (``names.normalised_name``, 422), the exercise as a submission's (422), and the
verdict's fields (400). A post that is not a result keeps nothing. The room keeps it as
self-reported: shown apart on the board, never counted as passed by the room, which
grades only what it ran itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from lockshop.exercises.results import is_lesson
from lockshop.front_door import Refused
from lockshop.room.names import normalised_name
from lockshop.room.submitted import known_exercise
from shop.i18n import lazy_gettext

#: A result is a few hundred bytes (a hundred checks, a few KB): the door's one cap.
MAX_BYTES = 64 * 1024
MAX_CHECKS = 100
MAX_ACTION = 500
#: What a post may say (``Rounds.board_post``): a field it does not know is refused, not
#: dropped, so that a grader of another version is told rather than misread.
FIELDS = frozenset({"name", "exercise", "passed", "broken_lesson", "rounds_total",
                    "rounds_passed", "checks"})


@dataclass(frozen=True)
class SelfReported:
    name: str  # normalised, as the board shows it
    exercise: str
    passed: bool
    #: The first broken lesson the student's grader named (None when it passed).
    broken_lesson: str | None


def checked_self_reported(body: object) -> SelfReported:
    """``body`` (untrusted, already read as JSON) as a self-reported result; ``Refused``
    (400, 422) says what it is not."""
    if not isinstance(body, dict):
        raise Refused(400, lazy_gettext("send a JSON object"))
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise Refused(400, lazy_gettext("a result has no field %(field)s (it has %(fields)s)",
                                        field=repr(unknown[0])[:40],
                                        fields=", ".join(sorted(FIELDS))))
    name = normalised_name(body.get("name"))
    exercise = known_exercise(body.get("exercise"))
    passed, broken = body.get("passed"), body.get("broken_lesson")
    if not isinstance(passed, bool):
        raise Refused(400, lazy_gettext("'passed' must be true or false"))
    if broken is not None and not is_lesson(broken):
        raise Refused(400, lazy_gettext("'broken_lesson' must be a lesson's id (C11) or null"))
    total, passed_rounds = body.get("rounds_total", 1), body.get("rounds_passed", 0)
    if not (_is_count(total) and _is_count(passed_rounds) and 1 <= total
            and passed_rounds <= total):
        raise Refused(400, lazy_gettext("'rounds_total' and 'rounds_passed' must be counts, "
                                        "the second at most the first"))
    checks = body.get("checks", [])
    if not isinstance(checks, list) or len(checks) > MAX_CHECKS:
        raise Refused(400, lazy_gettext("'checks' must be a list of at most %(count)s",
                                        count=MAX_CHECKS))
    for check in checks:
        if (not isinstance(check, dict) or not isinstance(check.get("passed"), bool)
                or not isinstance(check.get("applies", True), bool)
                or not is_lesson(check.get("lesson"))
                or not isinstance(check.get("action"), str)
                or len(check["action"]) > MAX_ACTION):
            raise Refused(400, lazy_gettext("each check must be {lesson: C11, action: text, "
                                            "passed: true or false}"))
    return SelfReported(name, exercise, passed, None if passed else broken)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10_000
