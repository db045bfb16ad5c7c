"""About the service itself: health, the strategies, the OpenAPI document."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from shop.api import schemas
from shop.api.spec import answers, spec
from shop.metrics import CONTENT_TYPE, render_prometheus
from shop.state import shop

meta = Blueprint("meta", __name__, url_prefix="/api")
prometheus = Blueprint("prometheus", __name__)


@prometheus.get("/metrics")
def metrics():
    """This instance's lock and order metrics, in Prometheus text format."""
    return Response(render_prometheus(), content_type=CONTENT_TYPE)


@meta.get("/health")
@spec.validate(resp=answers(200, schemas.Health), tags=["service"])
def health():
    """Say that this instance is up, and which one it is."""
    return jsonify({"status": "ok", "instance": shop().config.instance})


@meta.get("/strategies")
@spec.validate(resp=answers(200, schemas.StrategyList), tags=["service"])
def strategies():
    """List every strategy: family, expected correctness, and whether it is usable now."""
    state = shop()
    return jsonify({"current": state.settings().strategy, "strategies": state.strategies.describe()})


@meta.get("/openapi.json")
@spec.validate(resp=answers(200, schemas.OpenAPIDocument), tags=["service"])
def openapi():
    """This API's OpenAPI 3.1 document (the same as /api/docs/openapi.json)."""
    return jsonify(spec.spec)
