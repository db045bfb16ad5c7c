"""The one place where exceptions become HTTP answers.

Every error has the same JSON shape: ``{"error": <code>, "message": <text>}``
plus optional details. Lock errors map to 503 with ``Retry-After``: the
request may succeed later, and nothing was written.
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
from shop.store.db import is_unavailable

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 1


def error_response(http_status: int, code: str, message: str, headers: dict | None = None,
                   details: dict | None = None):
    """The one error shape: ``{"error": code, "message": text, ...details}``."""
    body = {"error": code, "message": message, **(details or {})}
    return jsonify(body), http_status, headers or {}


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(ShopError)
    def shop_error(error: ShopError):
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if error.status == 503 else None
        return error_response(error.status, error.code, error.message, headers, error.details)

    @app.errorhandler(LockError)
    def lock_error(error: LockError):
        retry = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        if isinstance(error, LockNotAcquired):
            return error_response(503, "lock_timeout", str(error), retry, {"lock": error.name})
        if isinstance(error, BackendUnavailable):
            return error_response(503, "backend_unavailable", str(error), retry,
                                  {"backend": error.backend})
        if isinstance(error, LockLost):
            return error_response(503, "lock_lost", f"{error}; nothing was written", retry)
        return error_response(503, "lock_error", str(error), retry)

    @app.errorhandler(UnknownStrategy)
    def unknown_strategy(error: UnknownStrategy):
        # Only reachable when the settings name a strategy this instance's
        # code does not have (the API refuses unknown names when they are set).
        return error_response(503, "unknown_strategy", str(error),
                              {"Retry-After": str(RETRY_AFTER_SECONDS)})

    @app.errorhandler(DBAPIError)
    def database_error(error: DBAPIError):
        if is_unavailable(error):
            log.warning("database unavailable: %s", error)
            return error_response(503, "database_unavailable", "the database cannot be reached",
                                  {"Retry-After": str(RETRY_AFTER_SECONDS)})
        log.exception("database error")
        return error_response(500, "internal_error", "database error; nothing was written")

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException):
        code = (error.name or "error").lower().replace(" ", "_")
        return error_response(error.code or 500, code, error.description or error.name)

    @app.errorhandler(Exception)
    def unexpected(error: Exception):
        # Sessions are opened with "with sessions.begin()", so whatever was
        # half-done has been rolled back by the time we get here.
        log.exception("unhandled error")
        return error_response(500, "internal_error", "unexpected error; nothing was written")
