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
student has none). Its body is capped at the door (``limits``: the room's
``self_reported.MAX_BYTES``) and checked by the room's one rule
(``lockshop.room.self_reported``). Freeing or removing a name is the room API's, with
the token.
"""

from __future__ import annotations

from flask import Blueprint, jsonify, request

from lockshop.console.control.web import the_control
from lockshop.exercises import listing as listing_of_exercises
from lockshop.front_door import Refused, json_object
from shop.i18n import lazy_gettext

room = Blueprint("room", __name__, url_prefix="/control")


@room.get("/exercises")
def exercises():
    return jsonify({"exercises": listing_of_exercises()})


@room.post("/room/results")
def self_reported_result():
    the_room = the_control().room
    if not the_room.admits(request.headers.get("X-Room-Code")):
        raise Refused(401, lazy_gettext("this needs the room code (X-Room-Code: <code>), as "
                                        "'lockshop up' printed it"))
    return jsonify(the_room.record_self_reported(json_object())), 201


@room.get("/room")
def board():
    return jsonify(the_control().room.board())
