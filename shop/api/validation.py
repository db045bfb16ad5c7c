"""Reading request bodies: every rejection names the field and what is wrong."""

from __future__ import annotations

import re

from flask import request

from ..errors import BadRequest, NotFound, Unprocessable

#: Ids are 32-bit on every database we support; a larger one cannot exist.
MAX_ID = 2**31 - 1
SEAT_PATTERN = re.compile(r"^[A-Za-z0-9]{1,16}$")


def json_object(*, required: bool = True) -> dict:
    """The body as a JSON object; an empty body is ``{}`` unless ``required``."""
    if not request.get_data(cache=True):
        if required:
            raise BadRequest("the body must be a JSON object")
        return {}
    body = request.get_json(force=True, silent=True)
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


def only_fields(body: dict, allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise BadRequest(f"unknown fields: {', '.join(unknown)}; "
                         f"allowed: {', '.join(sorted(allowed))}")


def whole_number(body: dict, key: str, *, low: int, high: int,
                 default: int | None = None) -> int:
    """``body[key]`` as an int in [low, high]; 400 for a wrong type, 422 out of range."""
    if key not in body:
        if default is None:
            raise BadRequest(f"'{key}' is required")
        return default
    value = body[key]
    # JSON true is a bool, and bool is an int in Python: refuse it explicitly.
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest(f"'{key}' must be a whole number, got {type(value).__name__}")
    if not low <= value <= high:
        raise Unprocessable(f"'{key}' must be between {low} and {high}, got {value}")
    return value


def seat_label(body: dict) -> str | None:
    if "seat" not in body or body["seat"] is None:
        return None
    seat = body["seat"]
    if not isinstance(seat, str) or not SEAT_PATTERN.match(seat):
        raise BadRequest("'seat' must be a seat label of 1-16 letters and digits, like 'B7'")
    return seat


def path_id(value: int, what: str) -> int:
    """An id from the URL; beyond the id range it cannot exist."""
    if not 1 <= value <= MAX_ID:
        raise NotFound(f"{what} {value} not found")
    return value
