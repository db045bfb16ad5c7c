"""The REST API: one blueprint per module, one error handler for all."""

from __future__ import annotations

from flask import Flask

from .admin import admin
from .errors import register_error_handlers
from .meta import meta, prometheus
from .orders import orders
from .products import products


def register_api(app: Flask) -> None:
    for blueprint in (products, orders, admin, meta, prometheus):
        app.register_blueprint(blueprint)
    register_error_handlers(app)
