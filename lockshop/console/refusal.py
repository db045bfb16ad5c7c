"""The one way the console says no: a refusal, with the HTTP status it is answered with.

Whatever the control refuses (a bad request, a lab while another runs, a sale out of
range, a result without the room code) raises ``Refused``; the control answers it as
``{"error": <in English>, "message": <in the request's language>}`` with its status.
It is the room's own class (``lockshop.room.refusal``): the room's API, served by the
same control, says no the same way, so one handler answers both.
"""

from __future__ import annotations

from lockshop.room.refusal import Refused

__all__ = ["Refused"]
