"""What the models cannot say about a request: ids in the URL."""

from __future__ import annotations

from shop.api.schemas import MAX_ID
from shop.errors import NotFound


def path_id(value: int, what: str) -> int:
    """An id from the URL; beyond the id range it cannot exist."""
    if not 1 <= value <= MAX_ID:
        raise NotFound(f"{what} {value} not found")
    return value
