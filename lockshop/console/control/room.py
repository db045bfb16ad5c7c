"""The room: the exercises, and the board of the students' results.

    GET  /control/exercises                   every exercise and what it asks
    POST /control/room/results                a student's result (X-Room-Code, not the token)
    GET  /control/room                        the room board: each student's latest results

Open to the room: a result needs the room code, which the room checks, not the admin
token (a student has none).
"""

from __future__ import annotations

from flask import Blueprint, jsonify, request

from lockshop.console.control.web import the_control
from lockshop.console.refusal import Refused
from lockshop.console.room import MAX_BYTES
from lockshop.exercises import catalogue as catalogue_of_exercises
from shop.i18n import lazy_gettext

room = Blueprint("room", __name__, url_prefix="/control")


@room.get("/exercises")
def exercises():
    return jsonify({"exercises": catalogue_of_exercises()})


@room.post("/room/results")
def room_result():
    if (request.content_length or 0) > MAX_BYTES:
        raise Refused(400, lazy_gettext("a result is at most %(bytes)s bytes", bytes=MAX_BYTES))
    kept = the_control().room.post(request.headers.get("X-Room-Code"),
                                   request.get_data(cache=False))
    return jsonify(kept), 201


@room.get("/room")
def board():
    return jsonify(the_control().room.board())
