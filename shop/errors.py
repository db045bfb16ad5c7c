"""The shop's errors. Each knows its HTTP status and a short machine-readable code.

Lock errors (``locks.LockError``) are mapped to answers in ``shop.api.errors``,
the one place where exceptions become HTTP.
"""

from __future__ import annotations


class ShopError(Exception):
    status = 500
    code = "internal_error"

    def __init__(self, message: str, **details) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class BadRequest(ShopError):
    """The request is malformed: not JSON, wrong types, unknown fields."""
    status, code = 400, "bad_request"


class Unauthorized(ShopError):
    status, code = 401, "unauthorized"


class NotFound(ShopError):
    status, code = 404, "not_found"


class Conflict(ShopError):
    status, code = 409, "conflict"


class SoldOut(Conflict):
    code = "sold_out"


class SeatTaken(Conflict):
    code = "seat_taken"


class OrderNotPending(Conflict):
    code = "order_not_pending"


class Unprocessable(ShopError):
    """Well-formed, but it asks for something that cannot be: a seat on an item."""
    status, code = 422, "unprocessable"


class ServiceUnavailable(ShopError):
    status, code = 503, "unavailable"


class StaleWriteRejected(ServiceUnavailable):
    """Fencing refused the write: a newer lock holder has written since."""
    code = "stale_write"
