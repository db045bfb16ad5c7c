"""Limits at the control's door: the largest body each path takes.

The front door (``lockshop.front_door.CappedBodies``) enforces them in front of the
control's Flask app, so that no route, and no helper a route calls, can read more than
its path's cap, whether the body comes with a Content-Length or chunked; the app answers
a 413 in the usual JSON shape. This table is the control's: which path takes how much.
"""

from __future__ import annotations

from lockshop.room import api as room_api
from lockshop.room import self_reported

#: The largest body a path takes, by prefix (the first that matches), in bytes.
CAPS: list[tuple[str, int]] = [
    # A student's source (at most 64 KB) as JSON, every byte escaped at worst; each of
    # the room's routes has its own smaller cap behind this one (a join: 4 KB).
    (f"{room_api.URL_PREFIX}/", room_api.SOURCE_BODY_BYTES),
    # A result graded on a student's own machine: its one cap, here at the door.
    ("/control/room/results", self_reported.MAX_BYTES),
]
#: Everything else: the instructor's JSON (a sale, a partition) is a few hundred bytes.
DEFAULT_CAP = 1024 * 1024


def cap_of(path: str) -> int:
    return next((cap for prefix, cap in CAPS if path.startswith(prefix)), DEFAULT_CAP)
