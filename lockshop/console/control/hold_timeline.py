"""The locks' view: who held which lock when, on every instance, and where holds overlap.

    GET  /control/holds?since=<epoch s>   every instance's holds, and the overlaps
                                          (from the whole second before ``since``)

Reading only: open to anyone in the room. One look at the instances a second serves
every browser (``RecentHolds``).
"""

from __future__ import annotations

import math

from flask import Blueprint, Response, request

from lockshop.console.control.web import the_control
from lockshop.front_door import Refused
from shop.i18n import lazy_gettext

hold_timeline = Blueprint("hold_timeline", __name__, url_prefix="/control/holds")


@hold_timeline.get("")
def holds_since():
    try:
        since = float(request.args.get("since", "0"))
        if not math.isfinite(since):
            raise ValueError(since)
    except ValueError:
        raise Refused(400, lazy_gettext(
                "since must be a number of seconds (time.time())")) from None
    return Response(the_control().holds.since(since), mimetype="application/json")
