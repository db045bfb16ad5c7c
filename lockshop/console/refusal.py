"""The one way the console says no: a refusal, with the HTTP status it is answered with.

Whatever the control refuses (a bad request, a lab while another runs, a sale out of
range, a result without the room code) raises ``Refused``; the control answers it as
``{"error": <in English>, "message": <in the request's language>}`` with its status.
"""

from __future__ import annotations


class Refused(Exception):
    """A request the console will not carry out, its HTTP status, and why."""

    def __init__(self, status: int, message: object) -> None:
        super().__init__(str(message))
        #: Lazy (lazy_gettext) where it can be: said in English as the stable ``error``,
        #: and in the request's language as ``message``.
        self.status, self.message = status, message
