"""Limits at the door: every request body is capped before anything reads it.

A WSGI middleware in front of the control's Flask app, so that no route, and no
helper a route calls, can read more than its path's cap, whether the body comes with
a Content-Length or chunked (no length: a 1 GB chunked POST was once read whole
before its 401, and ``up`` peaked at 2.2 GB). A declared length over the cap is
refused unread; a chunked body is read up to the cap and one byte more, and
refused if that byte came. Either way the app answers a 413 in the usual JSON shape
(``Refused``), and the server drops the rest of the body as it arrives.
"""

from __future__ import annotations

import io
from typing import Callable, Iterable

from lockshop.room import api as room_api

#: The largest body a path takes, by prefix (the first that matches), in bytes.
CAPS: list[tuple[str, int]] = [
    # A student's source (at most 64 KB) as JSON, every byte escaped at worst; each of
    # the room's routes has its own smaller cap behind this one (a join: 4 KB).
    (f"{room_api.URL_PREFIX}/", room_api.SOURCE_BODY_BYTES),
    ("/control/room/results", 64 * 1024),  # a result is a few hundred bytes
]
#: Everything else: the instructor's JSON (a sale, a partition) is a few hundred bytes.
DEFAULT_CAP = 1024 * 1024
#: Where the middleware tells the app that a body was over its cap (the cap, in bytes).
TOO_LARGE = "lockshop.body_over_cap"

WSGIApp = Callable[[dict, Callable], Iterable[bytes]]


def cap_of(path: str) -> int:
    return next((cap for prefix, cap in CAPS if path.startswith(prefix)), DEFAULT_CAP)


class CappedBodies:
    """Wraps a WSGI app: a body over its path's cap never reaches it."""

    def __init__(self, app: WSGIApp) -> None:
        self.app = app

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        cap = cap_of(environ.get("PATH_INFO", ""))
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
        # The app answers, so that the refusal has its JSON shape, language and CORS
        # headers; it sees an empty body.
        environ.update({TOO_LARGE: cap, "wsgi.input": io.BytesIO(b""), "CONTENT_LENGTH": "0",
                        "wsgi.input_terminated": False})
        return self.app(environ, start_response)


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
