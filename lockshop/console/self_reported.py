"""A result graded on a student's own machine, as ``exercise check --report`` posts it.

``lockshop exercise check N FILE --report URL --room CODE --name NAME`` posts one
result to the instructor's ``lockshop up``. The control checks the room code, then
the shape here (a post that is not a result, or larger than ``MAX_BYTES``, is a 400
and keeps nothing), and the room keeps it as self-reported: shown apart on the
board, never counted as passed by the room, which grades only what it ran itself.
"""

from __future__ import annotations

import json

from lockshop.console.refusal import Refused
from lockshop.exercises.results import is_lesson
from shop.i18n import lazy_gettext

#: A result is a few hundred bytes; anything much larger is not one.
MAX_BYTES = 16 * 1024
MAX_CHECKS = 100


def checked_result(body: bytes, exercise_ids: list[str]) -> dict:
    """``body`` as a result (name, exercise, passed, lesson, checks); ``Refused`` (400)
    if it is not one."""
    if len(body) > MAX_BYTES:
        raise Refused(400, lazy_gettext("a result is at most %(bytes)s bytes", bytes=MAX_BYTES))
    try:
        sent = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise Refused(400, lazy_gettext("send a JSON object")) from None
    if not isinstance(sent, dict):
        raise Refused(400, lazy_gettext("send a JSON object"))
    name = sent.get("name")
    if not isinstance(name, str) or not 1 <= len(name.strip()) <= 64:
        raise Refused(400, lazy_gettext("'name' must be 1 to 64 characters"))
    exercise = sent.get("exercise")
    if exercise not in exercise_ids:
        raise Refused(400, lazy_gettext("'exercise' must be one of %(ids)s",
                                        ids=", ".join(sorted(exercise_ids))))
    passed, lesson = sent.get("passed"), sent.get("lesson")
    if not isinstance(passed, bool):
        raise Refused(400, lazy_gettext("'passed' must be true or false"))
    if lesson is not None and not is_lesson(lesson):
        raise Refused(400, lazy_gettext("'lesson' must be a lesson's id (C11) or null"))
    checks = sent.get("checks", [])
    if not isinstance(checks, list) or len(checks) > MAX_CHECKS:
        raise Refused(400, lazy_gettext("'checks' must be a list of at most %(count)s",
                                        count=MAX_CHECKS))
    for check in checks:
        if (not isinstance(check, dict) or not isinstance(check.get("passed"), bool)
                or not is_lesson(check.get("lesson"))
                or not isinstance(check.get("action"), str) or len(check["action"]) > 500):
            raise Refused(400, lazy_gettext("each check must be {lesson: C11, action: text, "
                                            "passed: true or false}"))
    return {"name": name, "exercise": exercise, "passed": passed, "lesson": lesson}
