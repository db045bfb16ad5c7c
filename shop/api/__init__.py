"""The REST API: one blueprint per module, one error handler for all."""

from __future__ import annotations

from flask import Flask

from shop.api.admin import admin
from shop.api.errors import register_error_handlers
from shop.api.locks import lock_view
from shop.api.meta import meta, prometheus
from shop.api.orders import orders
from shop.api.products import products
from shop.api.spec import spec


def register_api(app: Flask) -> None:
    for blueprint in (products, orders, admin, lock_view, meta, prometheus):
        app.register_blueprint(blueprint)
    spec.register(app)  # the document and the docs page, from the views registered above
    register_error_handlers(app)
