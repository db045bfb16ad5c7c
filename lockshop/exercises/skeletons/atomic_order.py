"""Exercise 20: you may not need a lock. One conditional UPDATE.

Beyond the articles (lesson C25): every lock in this workshop guards a
read-check-write, three steps that must not interleave. Put the check in
the write's WHERE clause and there is one step left, which the database
runs atomically: ``UPDATE ... SET stock = stock - :q WHERE ... AND stock >=
:q`` either takes the stock or changes no row. Nothing is read before, so
there is no stale figure to sell on, and nothing is held while the slow
part runs. A seat is claimed the same way: only WHERE nobody holds it.

Check it:   ./run exercise check 20 atomic_order.py
The grader runs your order step inside three shop instances selling at once,
and on its own: buyers of the last unit and of the last seat, all past the
business delay before any of them writes.

The tables (SQLite here; the same SQL runs on PostgreSQL):
    products(id, stock, ...)                 one row per product
    seats(id, product_id, label, order_id)   a ticket's seats; order_id NULL when free
Run SQL on a connection ``db`` with ``db.execute(text("... :name ..."), {"name": value})``;
``.rowcount`` says how many rows an UPDATE changed.
"""

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
        # TODO 1 (C25): ONE UPDATE that takes the units only WHERE enough are left, the
        # check and the write in the same statement; then say whether it changed the row.
        raise NotImplementedError("TODO 1: UPDATE products SET stock = stock - :quantity WHERE "
                                  "id = :product AND stock >= :quantity; True if one row changed")

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
        # TODO 2 (C25): the same idea for a seat: ONE UPDATE that writes the order's id
        # only WHERE the seat has no order yet; then say whether it changed the row.
        raise NotImplementedError("TODO 2: UPDATE seats SET order_id = :order WHERE product_id "
                                  "= :product AND label = :seat AND order_id IS NULL; True if "
                                  "one row changed")
