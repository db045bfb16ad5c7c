"""Small helpers shared by tests."""

from __future__ import annotations

from sqlalchemy import select

from shop.models import Order, Product, Setting


def snapshot(app) -> dict:
    """Everything a request could change: products, orders, settings."""
    sessions = app.extensions["lockshop"].sessions
    with sessions.begin() as session:
        return {
            "products": [p.as_dict() for p in session.scalars(select(Product).order_by(Product.id))],
            "orders": [o.as_dict() for o in session.scalars(select(Order).order_by(Order.id))],
            "settings": dict(session.execute(select(Setting.key, Setting.value)).all()),
        }


def send(client, method: str, path: str, body):
    """Send ``body`` as JSON, or as raw bytes when it is bytes (malformed on purpose)."""
    if isinstance(body, bytes):
        return client.open(path, method=method, data=body, content_type="application/json")
    return client.open(path, method=method, json=body)
