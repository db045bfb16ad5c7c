"""About the service itself: health, the strategy catalogue, the OpenAPI document."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

import locks

from ..state import shop
from ..metrics import counters, render_prometheus
from .openapi import openapi_document

meta = Blueprint("meta", __name__, url_prefix="/api")
prometheus = Blueprint("prometheus", __name__)


@prometheus.get("/metrics")
def metrics():
    """This instance's lock and order metrics, in Prometheus text format."""
    return Response(render_prometheus(locks.metrics, counters),
                    content_type="text/plain; version=0.0.4; charset=utf-8")


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
