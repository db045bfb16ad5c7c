"""Products, with their stock and, for tickets, the seat map."""

from __future__ import annotations

from flask import Blueprint, jsonify
from sqlalchemy import select

from shop.api import schemas
from shop.api.spec import answers, spec
from shop.api.validation import path_id
from shop.errors import NotFound
from shop.i18n import lazy_gettext
from shop.state import shop
from shop.store.models import LIVE_STATUSES, Order, Product, ProductKind, Seat

products = Blueprint("products", __name__, url_prefix="/api/products")


@products.get("")
@spec.validate(resp=answers(200, schemas.ProductList), tags=["products"])
def list_products():
    """List every product with its stock."""
    with shop().sessions.begin() as session:
        rows = session.execute(select(Product).order_by(Product.id)).scalars().all()
        return jsonify({"products": [p.as_dict() for p in rows]})


@products.get("/<int:product_id>")
@spec.validate(resp=answers(200, schemas.Product, 404), tags=["products"])
def show_product(product_id: int):
    """Show one product; a ticket comes with its seats and who holds them."""
    path_id(product_id, "product")
    with shop().sessions.begin() as session:
        product = session.get(Product, product_id)
        if product is None:
            raise NotFound(lazy_gettext("product %(product)s not found", product=product_id))
        body = product.as_dict()
        if product.kind == ProductKind.TICKET.value:
            body["seats"] = seat_map(session, product_id)
        return jsonify(body)


@products.get("/<int:product_id>/stocktake")
@spec.validate(resp=answers(200, schemas.Stocktake, 404, 503), tags=["products"])
def stocktake(product_id: int):
    """Count the product in two reads under the strategy's read lock; say if they add up."""
    path_id(product_id, "product")
    return jsonify(shop().stocktake(product_id).as_dict())


def seat_map(session, product_id: int) -> list[dict]:
    """Every seat in order, with the ids of the live orders holding it (two is a double booking)."""
    holders: dict[str, list[int]] = {}
    for order_id, seat in session.execute(
            select(Order.id, Order.seat).where(Order.product_id == product_id,
                                               Order.status.in_(LIVE_STATUSES),
                                               Order.seat.is_not(None))):
        holders.setdefault(seat, []).append(order_id)
    labels = session.scalars(select(Seat.label).where(Seat.product_id == product_id)
                             .order_by(Seat.id))
    return [{"label": label, "taken": label in holders, "orders": holders.get(label, [])}
            for label in labels]
