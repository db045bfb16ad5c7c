"""About the service itself: health, the strategy catalogue, the OpenAPI document."""

from __future__ import annotations

from flask import Blueprint, jsonify

from ..state import shop
from .openapi import openapi_document

meta = Blueprint("meta", __name__, url_prefix="/api")


@meta.get("/health")
def health():
    """Say that this instance is up, and which one it is."""
    return jsonify({"status": "ok", "instance": shop().config.instance})


@meta.get("/strategies")
def strategies():
    """List every strategy: family, expected correctness, and whether it is usable now."""
    state = shop()
    return jsonify({"current": state.settings().strategy, "strategies": state.strategies.describe()})


@meta.get("/openapi.json")
def openapi():
    """The OpenAPI 3.1 description of this API."""
    return jsonify(openapi_document())
