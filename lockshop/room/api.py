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

Everything a student sends is untrusted: each body is capped before it is read,
by its Content-Length or, sent in chunks, as it is read (413 past the cap, and
never more than the cap held), then checked field by field. A refusal is
``{"error": <English>, "message": <the request's language>}`` with its status; a
store that fails is a 503. The instructor's actions take the admin token as the
control does (``Authorization: Bearer TOKEN``) or as ``X-Admin-Token``; with no
token configured they are open, as the control's are.
"""

from __future__ import annotations

import gzip
import hashlib
import hmac
import json
import sqlite3

from flask import Blueprint, Response, request

from lockshop.exercises import find, listing
from lockshop.room import Room, checked_source, known_exercise
from lockshop.room.refusal import Refused
from lockshop.exercises.skeleton_text import skeleton_text
from lockshop.room.store import MAX_SOURCE_BYTES
from shop.i18n import ENGLISH, current_language, language, lazy_gettext, resolve

URL_PREFIX = "/room/api"
#: A join is a code and a name: a few hundred bytes.
JOIN_BYTES = 4 * 1024
#: A source of 64 KB sent as JSON: an escape (\u0001) is six bytes for one.
SOURCE_BODY_BYTES = 6 * MAX_SOURCE_BYTES + 4 * 1024
#: A board smaller than this is sent as it is.
GZIP_FROM_BYTES = 2 * 1024
#: Read a chunked body this much at a time, counting.
READ_BYTES = 64 * 1024


def blueprint(room: Room, *, admin_token: str | None = None) -> Blueprint:
    """The room's API for ``room``, at ``URL_PREFIX``; ``admin_token`` guards the
    instructor's actions (none: open, as the control without a token)."""
    api = Blueprint("room_api", __name__, url_prefix=URL_PREFIX)

    @api.errorhandler(Refused)
    def refuse(refused: Refused):
        with language(ENGLISH):
            english = str(refused.message)
        return answer({"error": english, "message": str(refused.message)}, refused.status)

    @api.errorhandler(sqlite3.Error)
    def store_failed(error: sqlite3.Error):
        return refuse(Refused(503, lazy_gettext("the room's store failed: %(error)s",
                                                error=error)))

    def student():
        return room.student(request.headers.get("X-Student"))

    def instructor() -> None:
        if not admin_token:
            return
        scheme, _, bearer = request.headers.get("Authorization", "").partition(" ")
        given = request.headers.get("X-Admin-Token") or (
            bearer.strip() if scheme.lower() == "bearer" else "")
        if not hmac.compare_digest(given.encode(), admin_token.encode()):
            raise Refused(401, lazy_gettext(
                    "this needs the admin token (Authorization: Bearer <token>)"))

    @api.post("/join")
    def join():
        """Give this browser a name in the room."""
        body = json_body(JOIN_BYTES)
        secret, name = room.join(body.get("code"), body.get("name"))
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
        kept = room.store.source(student(), known_exercise(exercise))
        return answer({"exercise": exercise, "source": kept and kept["source"],
                       "saved_at": kept and kept["saved_at"]})

    @api.put("/sources/<exercise>")
    def keep_source(exercise: str):
        """Keep the editor's text, so that a reload or another laptop loses nothing."""
        who = student()
        known_exercise(exercise)
        text = checked_source(json_body(SOURCE_BODY_BYTES).get("source"))
        room.store.save_source(who, exercise, text)
        return answer({"exercise": exercise, "saved": True})

    @api.post("/submissions")
    def submit():
        """Put a check of the student's source in line."""
        who = student()
        body = json_body(SOURCE_BODY_BYTES)
        submission_id = room.submit(who, body.get("exercise"), body.get("source"),
                                    current_language())
        seen = room.store.submission(submission_id, who)
        return answer({"id": submission_id, "position": seen and seen["position"]}, 202)

    @api.get("/submissions/<submission_id>")
    def submission(submission_id: str):
        """Where the student's check is: its place in line, its checks so far, its verdict."""
        seen = room.store.submission(submission_id[:64], student())
        if seen is None:  # another student's is not found either: ids are not for guessing
            raise Refused(404, lazy_gettext("no check of yours with that id"))
        return answer(seen)

    @api.get("/board")
    def board():
        """Each student's latest result per exercise: the room's, and apart the
        self-reported."""
        body = compact(room.board()).encode()
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
        instructor()
        if not room.store.remove(name):
            raise no_such_name(name)
        return answer({"removed": name})

    @api.post("/students/<path:name>/free")
    def free(name: str):
        """Let a new browser take the name; the old one's secret stops working."""
        instructor()
        if not room.store.free(name):
            raise no_such_name(name)
        return answer({"freed": name})

    return api


def json_body(cap: int) -> dict:
    """The request's JSON object, read no further than ``cap`` bytes (413 past it)."""
    too_large = Refused(413, lazy_gettext("a request to the room is at most %(kb)s KB",
                                          kb=cap // 1024))
    if request.content_length is not None and request.content_length > cap:
        raise too_large  # refused before a byte of it is read
    received = bytearray()
    while True:  # sent in chunks, its length is known only at the end: count as it comes
        chunk = request.stream.read(READ_BYTES)
        if not chunk:
            break
        received += chunk
        if len(received) > cap:
            raise too_large
    try:
        body = json.loads(received)
    except (ValueError, UnicodeDecodeError):
        body = None
    if not isinstance(body, dict):
        raise Refused(400, lazy_gettext("send a JSON object"))
    return body


def no_such_name(name: str) -> Refused:
    return Refused(404, lazy_gettext("no student named %(name)s in this room", name=name))


def compact(value: object) -> str:
    # Names in any script, as themselves: "\u674e" would be six bytes for each of them.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def answer(value: dict, status: int = 200) -> Response:
    return Response(compact(value), status=status, mimetype="application/json")
