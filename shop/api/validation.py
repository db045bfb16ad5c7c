"""What spectree does not check for us: ids in the URL, and the bodies of views
that validate their own."""

from __future__ import annotations

from typing import TypeVar

from flask import request
from pydantic import BaseModel, ValidationError

from shop.api.schemas import MAX_ID
from shop.api.spec import json_object, refusal
from shop.errors import NotFound
from shop.i18n import N_, lazy_gettext

Model = TypeVar("Model", bound=BaseModel)

#: What an id in the URL names, and how to say it is not there.
NOT_FOUND = {"product": N_("product %(product)s not found"),
             "order": N_("order %(order)s not found")}


def path_id(value: int, what: str) -> int:
    """An id from the URL; beyond the id range it cannot exist."""
    if not 1 <= value <= MAX_ID:
        raise NotFound(lazy_gettext(NOT_FOUND[what], **{what: value}))
    return value


def body_as(model: type[Model]) -> Model:
    """The request's JSON body as ``model``, refused as spectree's validation would be."""
    try:
        return model.model_validate(json_object(request))
    except ValidationError as error:
        raise refusal(error) from None
