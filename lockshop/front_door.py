"""lockshop's front door for JSON over HTTP: what the console's control and the room's API
both stand on, so that a fix made at one door is made at the other.

- ``Refused``: the one way either says no. Raise it with the HTTP status and a (lazy)
  message; ``answer_refusal`` answers it, always as ``{"error": <in English>, "message":
  <in the request's language>}`` with its status. An HTTP error of Flask's own (404, 405)
  gets the same shape (``answer_http_error``).
- ``require_admin_token``: the instructor's token, as ``Authorization: Bearer TOKEN`` or
  ``X-Admin-Token: TOKEN``, compared in constant time; 401 without it. With no token
  configured (``ADMIN_TOKEN`` in the app's extensions, None) every action is open, and
  ``up`` says so when it starts.
- ``json_object``: the request's JSON object, read no further than its cap, whether the
  body says its length or comes in chunks (413 past the cap, and never more than the cap
  held), then 400 unless it is a JSON object.
- ``CappedBodies``: a WSGI middleware in front of an app, so that no route, and no helper
  a route calls, can read more than its path's cap: a declared length over the cap is
  refused unread; a chunked body is read up to the cap and one byte more, and refused if
  that byte came (a 1 GB chunked POST was once read whole before its 401, and ``up``
  peaked at 2.2 GB). The app answers the 413 itself (``refuse_a_body_over_its_cap``), so
  that it has the usual shape, language and headers; the server drops the rest of the
  body as it arrives.

Whatever comes through here is untrusted: nothing is read past a cap, and nothing a
request says is believed before it is checked.
"""

from __future__ import annotations

import hmac
import io
import json
from collections.abc import Callable, Iterable

from flask import Response, current_app, request
from werkzeug.exceptions import HTTPException

from shop.i18n import ENGLISH, language, lazy_gettext

#: Where an app keeps the instructor's token (None: the instructor's actions are open).
ADMIN_TOKEN = "lockshop.admin_token"
#: Where ``CappedBodies`` tells the app that a body was over its cap (the cap, in bytes).
TOO_LARGE = "lockshop.body_over_cap"
#: Read a chunked body this much at a time, counting.
READ_BYTES = 64 * 1024

WSGIApp = Callable[[dict, Callable], Iterable[bytes]]


class Refused(Exception):
    """A request that will not be carried out, its HTTP status, and why."""

    def __init__(self, status: int, message: object) -> None:
        super().__init__(str(message))
        #: Lazy (lazy_gettext) where it can be: said in English as the stable ``error``,
        #: and in the request's language as ``message``.
        self.status, self.message = status, message


def compact_json(value: object) -> str:
    # Names in any script, as themselves: "\u674e" would be six bytes for each of them.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def answer_refusal(refused: Refused) -> Response:
    """The one answer to a refusal: its status, ``{"error": English, "message": ...}``."""
    with language(ENGLISH):
        english = str(refused.message)
    return Response(compact_json({"error": english, "message": str(refused.message)}),
                    status=refused.status, mimetype="application/json")


def answer_http_error(error: HTTPException) -> Response:
    """Flask's own refusals (an unknown path, a wrong method) in the same shape, in the
    request's language; one the catalog has no words for, in Werkzeug's English."""
    if error.code == 404:
        said = lazy_gettext("nothing is at this address")
    elif error.code == 405:
        said = lazy_gettext("this address does not take %(method)s", method=request.method)
    else:
        return Response(compact_json({"error": error.description,
                                      "message": error.description}),
                        status=error.code, mimetype="application/json")
    answer = answer_refusal(Refused(error.code, said))
    if getattr(error, "valid_methods", None):
        answer.headers["Allow"] = ", ".join(error.valid_methods)  # as HTTP asks of a 405
    return answer


# --- the instructor's token --------------------------------------------------------------

def require_admin_token() -> None:
    """Refuse (401) a request without the app's admin token; with none configured, pass."""
    expected = current_app.extensions.get(ADMIN_TOKEN)
    if not expected:
        return
    scheme, _, bearer = request.headers.get("Authorization", "").partition(" ")
    given = request.headers.get("X-Admin-Token") or (
        bearer.strip() if scheme.lower() == "bearer" else "")
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise Refused(401, lazy_gettext("this needs the admin token (Authorization: Bearer "
                                        "<token>)"))


# --- bodies ------------------------------------------------------------------------------

def json_object(cap: int | None = None, *, fields: str | None = None,
                too_large: object | None = None) -> dict:
    """The request's JSON object, read no further than ``cap`` bytes (413, saying
    ``too_large``, past it); ``cap`` None: the body was capped at the door
    (``CappedBodies``). 400 (naming ``fields``, when given) unless it is an object."""
    if cap is not None:
        too_large = Refused(413, too_large or lazy_gettext(
            "a request here is at most %(bytes)s bytes", bytes=cap))
        if request.content_length is not None and request.content_length > cap:
            raise too_large  # refused before a byte of it is read
    received = bytearray()
    while True:  # sent in chunks, its length is known only at the end: count as it comes
        chunk = request.stream.read(READ_BYTES)
        if not chunk:
            break
        received += chunk
        if cap is not None and len(received) > cap:
            raise too_large
    try:
        body = json.loads(received)
    except (ValueError, UnicodeDecodeError, RecursionError):
        body = None
    if not isinstance(body, dict):
        raise Refused(400, lazy_gettext("send a JSON object: %(fields)s", fields=fields)
                      if fields else lazy_gettext("send a JSON object"))
    return body


class CappedBodies:
    """Wraps a WSGI app: a body over its path's cap (``cap_of(path)``) never reaches it."""

    def __init__(self, app: WSGIApp, cap_of: Callable[[str], int]) -> None:
        self.app, self.cap_of = app, cap_of

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        cap = self.cap_of(environ.get("PATH_INFO", ""))
        declared = environ.get("CONTENT_LENGTH")
        if declared:
            if not declared.isdigit() or int(declared) > cap:
                return self._too_large(environ, start_response, cap)
        elif environ.get("wsgi.input_terminated"):  # chunked: read no more than the cap
            body = _read_at_most(environ["wsgi.input"], cap + 1)
            if len(body) > cap:
                return self._too_large(environ, start_response, cap)
            environ.update({"wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)),
                            "wsgi.input_terminated": False})
        return self.app(environ, start_response)

    def _too_large(self, environ: dict, start_response: Callable,
                   cap: int) -> Iterable[bytes]:
        # The app answers (``refuse_a_body_over_its_cap``); it sees an empty body.
        environ.update({TOO_LARGE: cap, "wsgi.input": io.BytesIO(b""), "CONTENT_LENGTH": "0",
                        "wsgi.input_terminated": False})
        return self.app(environ, start_response)


def refuse_a_body_over_its_cap() -> None:
    """Before every request of an app behind ``CappedBodies``: 413 for a body over its cap."""
    cap = request.environ.get(TOO_LARGE)
    if cap is not None:
        raise Refused(413, lazy_gettext("a request here is at most %(bytes)s bytes", bytes=cap))


def _read_at_most(stream, size: int) -> bytes:
    """Up to ``size`` bytes of ``stream`` (a chunked stream returns a chunk per read)."""
    parts, kept = [], 0
    while kept < size:
        part = stream.read(size - kept)
        if not part:
            break
        parts.append(part)
        kept += len(part)
    return b"".join(parts)
