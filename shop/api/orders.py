"""Orders: place one through the current strategy, read it, pay it."""

from __future__ import annotations

from flask import Blueprint, jsonify, request, url_for

from shop.api import schemas
from shop.api.spec import answers, spec
from shop.api.validation import body_as, path_id
from shop.orders.idempotency import checked_key
from shop.orders.order_path import OrderRequest, get_order, pay_order
from shop.state import shop

orders = Blueprint("orders", __name__, url_prefix="/api/orders")


# The shop's busiest view checks its body itself, with the same model and the same
# refusals: spectree's checks of the request and of the answer cost more than the
# order's own work (``lockshop bench shop`` measured it). The document still lists both.
@orders.post("")
@spec.validate(json=schemas.NewOrder, headers=schemas.OrderHeaders, resp=answers(201, schemas.Order, 400, 404, 409, 422, 503),
               tags=["orders"], skip_validation=True)
def create_order():
    """Place an order through the current strategy.

    ``quantity`` of an item, or one seat of a ticket (the one named, or the first free).

    With an ``Idempotency-Key`` header (1 to 255 printable ASCII characters, one
    key per order, the same on every retry of it), a retry on any instance gets
    the order the key made, with ``Idempotent-Replayed: true``, and never makes a
    second one; the same key with another body is refused (422). Keys are kept
    for 24 hours.
    """
    body = body_as(schemas.NewOrder)
    key = checked_key(request.headers.get("Idempotency-Key"))
    placed = shop().place_order_once(OrderRequest(body.product_id, body.quantity, body.seat, key))
    headers = {"Location": url_for(".show_order", order_id=placed.order.id)}
    if placed.replayed:
        headers["Idempotent-Replayed"] = "true"
    return jsonify(placed.order.as_dict()), 201, headers


@orders.get("/<int:order_id>")
@spec.validate(resp=answers(200, schemas.Order, 404), tags=["orders"])
def show_order(order_id: int):
    """Show one order."""
    return jsonify(get_order(shop().sessions, path_id(order_id, "order")).as_dict())


@orders.post("/<int:order_id>/pay")
@spec.validate(resp=answers(200, schemas.Order, 404, 409), tags=["orders"])
def pay(order_id: int):
    """Pay a pending order."""
    return jsonify(pay_order(shop().sessions, path_id(order_id, "order")).as_dict())
