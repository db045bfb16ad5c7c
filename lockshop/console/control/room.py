"""The room as the console and the CLI see it. The students' side is the room's own:
its page at ``/room/`` and its API at ``/room/api/`` (``lockshop.room``), registered
on the same app.

    GET  /control/exercises                   every exercise and what it asks
    POST /control/room/results                a result graded on a student's own machine
                                              (``exercise check --report``; X-Room-Code,
                                              not the token): kept as self-reported
    GET  /control/room                        the board: what the room graded, and apart
                                              what students reported

Open to the room: a result needs the room code, checked here, not the admin token (a
student has none). Freeing or removing a name is the room API's, with the token.
"""

from __future__ import annotations

from flask import Blueprint, jsonify, request

from lockshop.console.control.web import the_control
from lockshop.console.refusal import Refused
from lockshop.console.self_reported import MAX_BYTES, checked_result
from lockshop.exercises import listing as listing_of_exercises
from shop.i18n import lazy_gettext

room = Blueprint("room", __name__, url_prefix="/control")


@room.get("/exercises")
def exercises():
    return jsonify({"exercises": listing_of_exercises()})


@room.post("/room/results")
def self_reported_result():
    if (request.content_length or 0) > MAX_BYTES:
        raise Refused(400, lazy_gettext("a result is at most %(bytes)s bytes", bytes=MAX_BYTES))
    the_room = the_control().room
    if not the_room.admits(request.headers.get("X-Room-Code")):
        raise Refused(401, lazy_gettext("this needs the room code (X-Room-Code: <code>), as "
                                        "'lockshop up' printed it"))
    ids = [exercise["id"] for exercise in listing_of_exercises()]
    result = checked_result(request.get_data(cache=False), ids)
    return jsonify(the_room.record_self_reported(result)), 201


@room.get("/room")
def board():
    return jsonify(the_control().room.board())
