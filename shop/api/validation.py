"""What spectree does not check for us: ids in the URL, and the bodies of views
that validate their own."""

from __future__ import annotations

from typing import TypeVar

from flask import request
from pydantic import BaseModel, ValidationError

from shop.api.schemas import MAX_ID
from shop.api.spec import json_object, refusal
from shop.errors import NotFound

Model = TypeVar("Model", bound=BaseModel)


def path_id(value: int, what: str) -> int:
    """An id from the URL; beyond the id range it cannot exist."""
    if not 1 <= value <= MAX_ID:
        raise NotFound(f"{what} {value} not found")
    return value


def body_as(model: type[Model]) -> Model:
    """The request's JSON body as ``model``, refused as spectree's validation would be."""
    try:
        return model.model_validate(json_object(request))
    except ValidationError as error:
        raise refusal(error) from None
