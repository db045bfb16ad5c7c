"""Small helpers shared by tests."""

from __future__ import annotations

import threading

from sqlalchemy import select

from locks import Backends
from shop.errors import SeatTaken, SoldOut
from shop.models import Order, Product, Setting
from shop.orders import OrderContext, OrderRequest
from shop.strategies import Strategies


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


def runner_for(sessions, name: str):
    """How the shop places an order under ``name``, on the database of ``sessions``."""
    dialect = sessions.kw["bind"].dialect.name
    return Strategies(Backends(), "mysql" if dialect == "mariadb" else dialect).runner(name)


def concurrent_sale(sessions, name: str, requests: list[OrderRequest], delay_ms: int) -> dict:
    """Every buyer orders at the same moment (a barrier) through ``name``; count outcomes."""
    runner = runner_for(sessions, name)
    context = OrderContext("test", name, business_delay_ms=delay_ms, lock_timeout_ms=30_000)
    start = threading.Barrier(len(requests))
    outcomes: list[str] = []

    def buyer(request: OrderRequest) -> None:
        start.wait()
        try:
            runner(sessions, request, context)
            outcomes.append("ok")
        except (SoldOut, SeatTaken):
            outcomes.append("refused")

    threads = [threading.Thread(target=buyer, args=(r,)) for r in requests]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"ok": outcomes.count("ok"), "refused": outcomes.count("refused")}
