"""A student's exercise 21, written from the skeleton: it must pass."""

import time
from dataclasses import replace

from sqlalchemy import Connection, Engine, insert, select
from sqlalchemy.exc import IntegrityError

from shop.errors import SoldOut
from shop.orders.custom_steps import OrderStep
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
    business_delay,
    check_request,
    insert_order,
)
from shop.orders.transactions import TAKE_STOCK, place_atomic
from shop.store.models import Order, OrderKey, PlacedOrder, ProductKind, utcnow


class IdempotentStep(OrderStep):
    """The order path that a retry cannot make twice: one key, one order."""

    family = "lock-free"

    def place(self, database: Engine, request: OrderRequest, context: OrderContext,
              kind: ProductKind | None = None, sleep=time.sleep) -> PlacedOrder:
        """One order per key: a retry of an order that was taken gets that order back."""
        kind = kind or check_request(database, request)
        if request.key is None or kind is ProductKind.TICKET:
            # No key, nothing to remember; a ticket: the shop's own step (this one sells items).
            return place_atomic(database, request, context, kind, sleep)
        with database.begin() as db:
            first = self.order_of_key(db, request.key)
        if first is not None:
            return first  # 1. a retry: nothing new is sold
        business_delay(context, sleep)  # meanwhile another attempt with this key may commit
        try:
            with database.begin() as db:
                # Exercise 20's conditional UPDATE takes the stock.
                if db.execute(TAKE_STOCK, {"product": request.product_id,
                                           "quantity": request.quantity}).rowcount != 1:
                    raise SoldOut(f"product {request.product_id} is sold out")
                order = insert_order(db, replace(request, key=None), None, context)
                self.remember_key(db, request, order.id)  # 2. in the order's own transaction
                return order
        except IntegrityError:
            with database.begin() as db:
                first = self.order_of_key(db, request.key)
            if first is None:
                raise
            return first

    def order_of_key(self, db: Connection, key: str) -> PlacedOrder | None:
        """The order ``key`` made, or None if it made none."""
        order_id = self.order_id_of_key(db, key)
        return None if order_id is None else self.load_order(db, order_id)

    def order_id_of_key(self, db: Connection, key: str) -> int | None:
        """The id of the order ``key`` made, or None."""
        return db.scalar(select(OrderKey.order_id).where(OrderKey.key == key))

    def remember_key(self, db: Connection, request: OrderRequest, order_id: int) -> None:
        """Write ``request.key`` beside the order it made (in the caller's transaction)."""
        db.execute(insert(OrderKey).values(key=request.key, order_id=order_id,
                                           request=request.asked, created_at=utcnow()))

    def load_order(self, db: Connection, order_id: int) -> PlacedOrder:
        """The order ``order_id`` as the shop answers it."""
        row = db.execute(select(Order.__table__).where(Order.id == order_id)).one()
        return PlacedOrder(**row._asdict())
