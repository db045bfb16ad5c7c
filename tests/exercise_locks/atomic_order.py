"""A student's exercise 20, written from the skeleton: it must pass."""

import time

from sqlalchemy import Connection, Engine, text, update

from shop.errors import SeatTaken, SoldOut
from shop.orders.custom_steps import OrderStep
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
    business_delay,
    check_request,
    insert_order,
)
from shop.store.models import Order, PlacedOrder, ProductKind


class AtomicStep(OrderStep):
    """The order path as one conditional UPDATE: the write is the check."""

    family = "lock-free"

    def place(self, database: Engine, request: OrderRequest, context: OrderContext,
              kind: ProductKind | None = None, sleep=time.sleep) -> PlacedOrder:
        """One order, no lock and no read: the stock is checked by the write itself."""
        kind = kind or check_request(database, request)
        business_delay(context, sleep)  # the slow part still takes its time; nothing is held
        with database.begin() as db:
            if not self.take_stock(db, request.product_id, request.quantity):
                # Raising rolls the transaction back: nothing was taken.
                raise SoldOut(f"product {request.product_id} is sold out")
            order = insert_order(db, request, None, context)
            if kind is ProductKind.TICKET:
                order.seat = self.claim_a_seat(db, request, order.id)
            return order

    def take_stock(self, db: Connection, product_id: int, quantity: int) -> bool:
        """Take ``quantity`` units if there are that many: True if they were taken."""
        taken = db.execute(text("UPDATE products SET stock = stock - :quantity "
                                "WHERE id = :product AND stock >= :quantity"),
                           {"quantity": quantity, "product": product_id})
        return taken.rowcount == 1

    def claim_a_seat(self, db: Connection, request: OrderRequest, order_id: int) -> str:
        """The named seat, or the first free one, claimed for ``order_id``; its label."""
        candidates = [request.seat] if request.seat else list(db.scalars(
            text("SELECT label FROM seats WHERE product_id = :product AND order_id IS NULL "
                 "ORDER BY id"), {"product": request.product_id}))
        for label in candidates:
            if self.claim_seat(db, request.product_id, label, order_id):
                db.execute(update(Order).where(Order.id == order_id).values(seat=label))
                return label
        # Raising rolls back the stock taken and the order with it.
        if request.seat:
            raise SeatTaken(f"seat {request.seat} is taken", seat=request.seat)
        raise SoldOut(f"product {request.product_id} has no free seat", remaining=0)

    def claim_seat(self, db: Connection, product_id: int, label: str, order_id: int) -> bool:
        """Give seat ``label`` to ``order_id`` if nobody holds it: True if it was free."""
        claimed = db.execute(text("UPDATE seats SET order_id = :order WHERE product_id = :product "
                                  "AND label = :seat AND order_id IS NULL"),
                             {"order": order_id, "product": product_id, "seat": label})
        return claimed.rowcount == 1
