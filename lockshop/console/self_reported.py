"""The room board: every student's latest result per exercise, posted by the grader.

``lockshop exercise check N FILE --report URL --room CODE --name NAME`` posts
one result to the instructor's ``lockshop up``; the console's Exercises page
shows the board, student by exercise. The room code (printed by ``up``) keeps
out whoever is not in the room: a post without it, or with another, is a 401
and stores nothing. A post that is not the expected shape, or is larger than
``MAX_BYTES``, is a 400 and stores nothing. Names and messages are kept as
given and shown as text, never as HTML (the page builds its cells with
``textContent``).
"""

from __future__ import annotations

import hmac
import json
import re
import threading
import time

from lockshop.console.refusal import Refused
from lockshop.room.codes import new_code
from shop.i18n import lazy_gettext

#: A result is a few hundred bytes; anything much larger is not one.
MAX_BYTES = 16 * 1024
MAX_CHECKS = 100
_LESSON = re.compile(r"^C\d{2}$")


class Room:
    """The board of one workshop room, kept in memory for as long as ``up`` runs."""

    def __init__(self, exercise_ids: list[str], code: str | None = None) -> None:
        self.code = code or new_code()
        self._exercises = set(exercise_ids)
        self._results: dict[tuple[str, str], dict] = {}
        self._guard = threading.Lock()

    def post(self, given_code: str | None, body: bytes) -> dict:
        """Keep one result; ``Refused`` (401, 400) keeps nothing."""
        if not given_code or not hmac.compare_digest(given_code.strip().upper().encode(),
                                                     self.code.encode()):
            raise Refused(401, lazy_gettext(
                    "this needs the room code (X-Room-Code: <code>), as "
                    "'lockshop up' printed it"))
        if len(body) > MAX_BYTES:
            raise Refused(400, lazy_gettext(
                    "a result is at most %(bytes)s bytes", bytes=MAX_BYTES))
        result = self._checked(body)
        with self._guard:
            self._results[(result["name"], result["exercise"])] = result
        return result

    def board(self) -> dict:
        """Every student's latest result per exercise, students in the order they came."""
        with self._guard:
            results = sorted(self._results.values(), key=lambda r: r["at"])
        students = list(dict.fromkeys(r["name"] for r in results))
        return {"students": students, "results": results}

    def _checked(self, body: bytes) -> dict:
        try:
            sent = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise Refused(400, lazy_gettext("send a JSON object")) from None
        if not isinstance(sent, dict):
            raise Refused(400, lazy_gettext("send a JSON object"))
        name = sent.get("name")
        if not isinstance(name, str) or not 1 <= len(name.strip()) <= 64:
            raise Refused(400, lazy_gettext("'name' must be 1 to 64 characters"))
        if any(ord(c) < 32 for c in name):
            raise Refused(400, lazy_gettext("'name' cannot contain control characters"))
        exercise = sent.get("exercise")
        if exercise not in self._exercises:
            raise Refused(400, lazy_gettext("'exercise' must be one of %(ids)s",
                                                ids=", ".join(sorted(self._exercises))))
        passed, lesson = sent.get("passed"), sent.get("lesson")
        if not isinstance(passed, bool):
            raise Refused(400, lazy_gettext("'passed' must be true or false"))
        if lesson is not None and (not isinstance(lesson, str) or not _LESSON.match(lesson)):
            raise Refused(400, lazy_gettext("'lesson' must be a lesson's id (C11) or null"))
        checks = sent.get("checks", [])
        if not isinstance(checks, list) or len(checks) > MAX_CHECKS:
            raise Refused(400, lazy_gettext("'checks' must be a list of at most %(count)s",
                                                count=MAX_CHECKS))
        for check in checks:
            if (not isinstance(check, dict) or not isinstance(check.get("passed"), bool)
                    or not isinstance(check.get("lesson"), str)
                    or not _LESSON.match(check["lesson"])
                    or not isinstance(check.get("title"), str) or len(check["title"]) > 500):
                raise Refused(400, lazy_gettext("each check must be {lesson: C11, title: text, "
                                                    "passed: true or false}"))
        return {"name": name.strip(), "exercise": exercise, "passed": passed,
                "lesson": lesson, "checks": checks, "at": time.time()}
