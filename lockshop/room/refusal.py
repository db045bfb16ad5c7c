"""The one way the room says no: a refusal, with the HTTP status it is answered with.

Everything the room will not do (a wrong room code, a taken or unreadable name, a
source past its cap, another student's submission) raises ``Refused``; the room's
API answers it as ``{"error": <in English>, "message": <in the request's
language>}`` with its status, and whoever calls the room from Python (the
console's control) can do the same.
"""

from __future__ import annotations


class Refused(Exception):
    """A request the room will not carry out, its HTTP status, and why."""

    def __init__(self, status: int, message: object) -> None:
        super().__init__(str(message))
        #: Lazy (lazy_gettext) where it can be: said in English as the stable ``error``,
        #: and in the request's language as ``message``.
        self.status, self.message = status, message
