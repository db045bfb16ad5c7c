"""Orders: place one through the current strategy, read it, pay it."""

from __future__ import annotations

from flask import Blueprint, jsonify, url_for

from ..orders import MAX_QUANTITY, OrderRequest, get_order, pay_order
from ..state import shop
from .validation import MAX_ID, json_object, only_fields, path_id, seat_label, whole_number

orders = Blueprint("orders", __name__, url_prefix="/api/orders")


@orders.post("")
def create_order():
    """Buy ``quantity`` of an item, or one seat of a ticket (a named one or the first free)."""
    body = json_object()
    only_fields(body, {"product_id", "quantity", "seat"})
    request = OrderRequest(
        product_id=whole_number(body, "product_id", low=1, high=MAX_ID),
        quantity=whole_number(body, "quantity", low=1, high=MAX_QUANTITY, default=1),
        seat=seat_label(body))
    order = shop().place_order(request)
    return jsonify(order.as_dict()), 201, {"Location": url_for(".show_order", order_id=order.id)}


@orders.get("/<int:order_id>")
def show_order(order_id: int):
    """Show one order."""
    return jsonify(get_order(shop().sessions, path_id(order_id, "order")).as_dict())


@orders.post("/<int:order_id>/pay")
def pay(order_id: int):
    """Pay a pending order."""
    return jsonify(pay_order(shop().sessions, path_id(order_id, "order")).as_dict())
