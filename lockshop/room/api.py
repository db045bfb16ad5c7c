"""The room's HTTP API, under the room's address: what the room page calls, and a script may.

    POST   /room/api/join                     {"code", "name"} -> 201 {"student": SECRET, "name"}
    GET    /room/api/me                       (X-Student) -> {"name"}
    GET    /room/api/exercises                every exercise and what it asks
    GET    /room/api/exercises/ID/skeleton    ?lang=zh_CN -> the skeleton, as text
    GET    /room/api/sources/ID               (X-Student) -> {"exercise", "source", "saved_at"}
    PUT    /room/api/sources/ID               (X-Student) {"source"}: keep the editor's text
    POST   /room/api/submissions              (X-Student) {"exercise", "source"} -> 202 {"id"}
    GET    /room/api/submissions/SID          (X-Student) -> {"state", "position", "checks",
                                              "passed", "message"}
    GET    /room/api/board                    {"students", "results"}
    DELETE /room/api/students/NAME            (admin token) remove a name and its results
    POST   /room/api/students/NAME/free       (admin token) a new browser may take the name

A submission's checks are the grade's own records (``CheckResult.record``: the mark's
``passed`` and ``applies``, the diagnosis and its ``cause``), and its message is the
command line's verdict line; a board result's ``broken_lesson`` is the first broken
lesson as the command line names it.

It stands on lockshop's front door (``lockshop.front_door``), as the console's control
does: one refusal and its JSON answer, one token check, one capped JSON reader.
Everything a student sends is untrusted: each body is capped before it is read, by its
Content-Length or, sent in chunks, as it is read (413 past the cap, and never more than
the cap held), then checked field by field. A refusal is ``{"error": <English>,
"message": <the request's language>}`` with its status; a store that fails is a 503.
The instructor's actions take the admin token (``Authorization: Bearer TOKEN`` or
``X-Admin-Token``); with no token configured they are open, as the control's are.

``api`` is a blueprint of the module, as each of the control's is; ``serve(app, room)``
puts it on an app with the room it answers for, behind the app's own admin token.
"""

from __future__ import annotations

import gzip
import hashlib
import sqlite3

from flask import Blueprint, Flask, Response, current_app, request

from lockshop.exercises import find, listing
from lockshop.exercises.skeleton_text import skeleton_text
from lockshop.front_door import (
    ADMIN_TOKEN,
    Refused,
    answer_refusal,
    compact_json,
    json_object,
    require_admin_token,
)
from lockshop.room import Room, checked_source, known_exercise
from lockshop.room.store import MAX_SOURCE_BYTES, Student
from shop.i18n import current_language, lazy_gettext, resolve

URL_PREFIX = "/room/api"
#: A join is a code and a name: a few hundred bytes.
JOIN_BYTES = 4 * 1024
#: A source of 64 KB sent as JSON: an escape (\u0001) is six bytes for one.
SOURCE_BODY_BYTES = 6 * MAX_SOURCE_BYTES + 4 * 1024
#: A board smaller than this is sent as it is.
GZIP_FROM_BYTES = 2 * 1024
#: Where an app keeps the room its API answers for.
ROOM = "lockshop.room"

api = Blueprint("room_api", __name__, url_prefix=URL_PREFIX)
api.register_error_handler(Refused, answer_refusal)


def serve(app: Flask, room: Room) -> None:
    """Answer for ``room`` on ``app`` at ``URL_PREFIX``. The instructor's actions are
    guarded by the app's admin token, which its maker set (``ADMIN_TOKEN`` in its
    extensions; None: open, as the control without a token): one owner, so that no
    second writer replaces it. An app that never said is refused, rather than open."""
    if ADMIN_TOKEN not in app.extensions:
        raise ValueError(f"set app.extensions[{ADMIN_TOKEN!r}] (None: no token) before "
                         "serving the room on it")
    app.extensions[ROOM] = room
    app.register_blueprint(api)


def the_room() -> Room:
    """The room this request is answered for."""
    return current_app.extensions[ROOM]


@api.errorhandler(sqlite3.Error)
def store_failed(error: sqlite3.Error):
    return answer_refusal(Refused(503, lazy_gettext("the room's store failed: %(error)s",
                                                    error=error)))


def student() -> Student:
    return the_room().student(request.headers.get("X-Student"))


def room_json(cap: int) -> dict:
    """The request's JSON object, read no further than ``cap`` bytes (413 past it)."""
    return json_object(cap, too_large=lazy_gettext("a request to the room is at most "
                                                   "%(kb)s KB", kb=cap // 1024))


@api.post("/join")
def join():
    """Give this browser a name in the room."""
    body = room_json(JOIN_BYTES)
    secret, name = the_room().join(body.get("code"), body.get("name"))
    return answer({"student": secret, "name": name}, 201)


@api.get("/me")
def me():
    """The name this browser holds."""
    return answer({"name": student().name})


@api.get("/exercises")
def exercises():
    """Every exercise and what it asks, in the request's language."""
    return answer({"exercises": listing()})


@api.get("/exercises/<exercise>/skeleton")
def skeleton(exercise: str):
    """The exercise's skeleton: where a student starts."""
    chosen = request.args.get("lang")
    tag = resolve(chosen) if chosen else current_language()
    text = skeleton_text(find(known_exercise(exercise)), tag)
    return Response(text, content_type="text/plain; charset=utf-8")


@api.get("/sources/<exercise>")
def kept_source(exercise: str):
    """The student's text for the exercise as last kept (null if never)."""
    kept = the_room().store.source(student(), known_exercise(exercise))
    return answer({"exercise": exercise, "source": kept and kept["source"],
                   "saved_at": kept and kept["saved_at"]})


@api.put("/sources/<exercise>")
def keep_source(exercise: str):
    """Keep the editor's text, so that a reload or another laptop loses nothing."""
    who = student()
    known_exercise(exercise)
    text = checked_source(room_json(SOURCE_BODY_BYTES).get("source"))
    the_room().store.save_source(who, exercise, text)
    return answer({"exercise": exercise, "saved": True})


@api.post("/submissions")
def submit():
    """Put a check of the student's source in line."""
    who = student()
    body = room_json(SOURCE_BODY_BYTES)
    room = the_room()
    submission_id = room.submit(who, body.get("exercise"), body.get("source"),
                                current_language())
    seen = room.store.submission(submission_id, who)
    return answer({"id": submission_id, "position": seen and seen["position"]}, 202)


@api.get("/submissions/<submission_id>")
def submission(submission_id: str):
    """Where the student's check is: its place in line, its checks so far, its verdict."""
    seen = the_room().store.submission(submission_id[:64], student())
    if seen is None:  # another student's is not found either: ids are not for guessing
        raise Refused(404, lazy_gettext("no check of yours with that id"))
    return answer(seen)


@api.get("/board")
def board():
    """Each student's latest result per exercise: the room's, and apart the
    self-reported."""
    body = compact_json(the_room().board()).encode()
    tag = hashlib.sha256(body).hexdigest()[:32]
    response = Response(body, mimetype="application/json")
    if "gzip" in request.accept_encodings and len(body) > GZIP_FROM_BYTES:
        # Every browser takes gzip: a board of names repeated is a tenth of its size.
        response.set_data(gzip.compress(body, compresslevel=6))
        response.headers["Content-Encoding"] = "gzip"
        tag += "-gzip"  # another representation: another tag
    response.vary.add("Accept-Encoding")
    # Thirty browsers poll it: an unchanged board is a 304 with no body.
    response.set_etag(tag)
    response.cache_control.no_cache = True
    return response.make_conditional(request)


@api.delete("/students/<path:name>")
def remove(name: str):
    """Take a name out of the room, with its sources and results."""
    require_admin_token()
    if not the_room().store.remove(name):
        raise no_such_name(name)
    return answer({"removed": name})


@api.post("/students/<path:name>/free")
def free(name: str):
    """Let a new browser take the name; the old one's secret stops working."""
    require_admin_token()
    if not the_room().store.free(name):
        raise no_such_name(name)
    return answer({"freed": name})


def no_such_name(name: str) -> Refused:
    return Refused(404, lazy_gettext("no student named %(name)s in this room", name=name))


def answer(value: dict, status: int = 200) -> Response:
    return Response(compact_json(value), status=status, mimetype="application/json")
