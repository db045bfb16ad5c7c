"""Orders: place one through the current strategy, read it, pay it."""

from __future__ import annotations

from flask import Blueprint, jsonify, url_for

from shop.api import schemas
from shop.api.spec import answers, spec
from shop.api.validation import body_as, path_id
from shop.orders.order_path import OrderRequest, get_order, pay_order
from shop.state import shop

orders = Blueprint("orders", __name__, url_prefix="/api/orders")


# The shop's busiest view checks its body itself, with the same model and the same
# refusals: spectree's checks of the request and of the answer cost more than the
# order's own work (``lockshop bench shop`` measured it). The document still lists both.
@orders.post("")
@spec.validate(json=schemas.NewOrder, resp=answers(201, schemas.Order, 400, 404, 409, 422, 503),
               tags=["orders"], skip_validation=True)
def create_order():
    """Place an order through the current strategy.

    ``quantity`` of an item, or one seat of a ticket (the one named, or the first free).
    """
    body = body_as(schemas.NewOrder)
    order = shop().place_order(OrderRequest(body.product_id, body.quantity, body.seat))
    return jsonify(order.as_dict()), 201, {"Location": url_for(".show_order", order_id=order.id)}


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
