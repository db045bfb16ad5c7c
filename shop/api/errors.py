"""The one place where exceptions become HTTP answers.

Every error has the same JSON shape: ``{"error": <code>, "message": <text>}``
plus optional details. Lock errors map to 503 with ``Retry-After``: the
request may succeed later, and nothing was written.

``error`` is a stable English code, for programs; ``message`` is for a person,
in the request's language (``shop.i18n.web``): the shop's errors carry lazy
messages, and the lock errors, which know nothing of languages, are said here
from what they carry.
"""

from __future__ import annotations

import logging

from flask import Flask, jsonify
from sqlalchemy.exc import DBAPIError
from werkzeug.exceptions import HTTPException

from locks import (
    BackendUnavailable,
    LockError,
    LockLost,
    LockNotAcquired,
    UnknownStrategy,
)
from shop.errors import ShopError
from shop.i18n import N_, _
from shop.i18n.lock_errors import BACKENDS, say_reason
from shop.store.db import is_unavailable

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 1

#: Werkzeug's own answers (no such page, wrong method...) in the shop's words, by
#: status; one a view gave a description of its own keeps it.
HTTP_MESSAGES = {
    400: N_("the request is malformed"),
    401: N_("this needs credentials"),
    403: N_("this is not allowed"),
    404: N_("there is nothing at this address"),
    405: N_("this address does not take that method"),
    413: N_("the request body is too large"),
    415: N_("this media type is not supported"),
    429: N_("too many requests; try again later"),
    500: N_("unexpected error; nothing was written"),
    503: N_("the service is unavailable; try again later"),
}


def error_response(http_status: int, code: str, message: str, headers: dict | None = None,
                   details: dict | None = None):
    """The one error shape: ``{"error": code, "message": text, ...details}``."""
    body = {"error": code, "message": str(message), **(details or {})}
    return jsonify(body), http_status, headers or {}


def lock_error_answer(error: LockError) -> tuple[str, str, dict | None]:
    """A lock error's code, its message in the current language, and its details."""
    if isinstance(error, LockNotAcquired):
        return "lock_timeout", _(
            "lock %(lock)s was not acquired within %(timeout)s s; try again",
            lock=error.name, timeout=f"{error.timeout:g}"), {"lock": error.name}
    if isinstance(error, BackendUnavailable):
        return "backend_unavailable", _(
            "%(backend)s cannot be reached (lock %(lock)s); nothing was locked",
            backend=say_reason(error.backend, BACKENDS), lock=error.name), \
            {"backend": error.backend}
    if isinstance(error, LockLost):
        return "lock_lost", _(
            "lock %(lock)s was lost while held (%(reason)s); nothing was written",
            lock=error.name, reason=say_reason(error.reason)), None
    return "lock_error", _("lock error: %(error)s", error=str(error)), None


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(ShopError)
    def shop_error(error: ShopError):
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if error.status == 503 else None
        return error_response(error.status, error.code, error.message, headers, error.details)

    @app.errorhandler(LockError)
    def lock_error(error: LockError):
        code, message, details = lock_error_answer(error)
        return error_response(503, code, message, {"Retry-After": str(RETRY_AFTER_SECONDS)},
                              details)

    @app.errorhandler(UnknownStrategy)
    def unknown_strategy(error: UnknownStrategy):
        # Only reachable when the settings name a strategy this instance's
        # code does not have (the API refuses unknown names when they are set).
        return error_response(503, "unknown_strategy", _(
            "unknown strategy '%(name)s'; known: %(known)s", name=error.name,
            known=", ".join(error.known)), {"Retry-After": str(RETRY_AFTER_SECONDS)})

    @app.errorhandler(DBAPIError)
    def database_error(error: DBAPIError):
        if is_unavailable(error):
            log.warning("database unavailable: %s", error)
            return error_response(503, "database_unavailable", _("the database cannot be reached"),
                                  {"Retry-After": str(RETRY_AFTER_SECONDS)})
        log.exception("database error")
        return error_response(500, "internal_error", _("database error; nothing was written"))

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException):
        code = (error.name or "error").lower().replace(" ", "_")
        status = error.code or 500
        message = error.description or error.name
        if status in HTTP_MESSAGES and error.description == type(error).description:
            message = _(HTTP_MESSAGES[status])
        return error_response(status, code, message)

    @app.errorhandler(Exception)
    def unexpected(error: Exception):
        # Sessions are opened with "with sessions.begin()", so whatever was
        # half-done has been rolled back by the time we get here.
        log.exception("unhandled error")
        return error_response(500, "internal_error", _(HTTP_MESSAGES[500]))
