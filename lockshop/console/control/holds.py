"""The locks' view: who held which lock when, on every instance, and where holds overlap.

    GET  /control/holds?since=<epoch s>   every instance's holds, and the overlaps

Reading only: open to anyone in the room.
"""

from __future__ import annotations

from flask import Blueprint, jsonify, request

from lockshop.cluster.hold_logs import collect_holds
from lockshop.console.control.web import the_control
from lockshop.console.refusal import Refused
from shop.i18n import lazy_gettext

holds = Blueprint("holds", __name__, url_prefix="/control/holds")


@holds.get("")
def holds_since():
    try:
        since = float(request.args.get("since", "0"))
    except ValueError:
        raise Refused(400, lazy_gettext(
                "since must be a number of seconds (time.time())")) from None
    cluster = the_control().cluster
    return jsonify(collect_holds({i.name: i.url for i in cluster.instances}, since))
