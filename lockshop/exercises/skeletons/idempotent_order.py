"""Exercise 21: the retried order. One Idempotency-Key, one order.

Beyond the articles (lesson C44): a buyer whose answer never came (a
timeout, a dropped connection) cannot know whether the order was taken: the
shop may have committed it. Retrying is right, since it may have failed, and
without more it buys twice. No lock helps here: the two attempts may even
run on two instances. The answer is a key the buyer makes once per order and
sends with every attempt of it (the ``Idempotency-Key`` header):

1. an attempt whose key made an order already gets that order back, and
   nothing new is sold;
2. the attempt that sells writes the key beside its order, in the order's
   own transaction: the key is the table's primary key, so a second order
   with the same key cannot commit, wherever it runs;
3. an attempt that lost that race (its key's insert fails) answers with the
   order of the attempt that won.

Check it:   ./run exercise check 21 idempotent_order.py
The grader loses the answer of a committed order and retries it with the same
key, on another shop instance, both while the first attempt is still at work
and after it is done; the shop's audit must count one order per key.

The table (SQLite here; the same code runs on PostgreSQL):
    order_keys(key PRIMARY KEY, order_id, request, created_at)
Write it with SQLAlchemy's ``insert(OrderKey)`` and read it with ``select(OrderKey...)``
(they write the timestamp in the database's own format).
"""

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
            # TODO 3 (C44): our key's insert failed, so another attempt with this key
            # committed first (and this transaction rolled back: nothing was sold). Its
            # order is our answer: read it (order_of_key, in a transaction of its own).
            raise NotImplementedError("TODO 3: the key was taken by an attempt that committed "
                                      "first: answer with its order")

    def order_of_key(self, db: Connection, key: str) -> PlacedOrder | None:
        """The order ``key`` made, or None if it made none."""
        order_id = self.order_id_of_key(db, key)
        return None if order_id is None else self.load_order(db, order_id)

    def order_id_of_key(self, db: Connection, key: str) -> int | None:
        """The id of the order ``key`` made, or None."""
        # TODO 1 (C44): find the key's row and read its order_id; None when there is none.
        raise NotImplementedError("TODO 1: SELECT order_id FROM order_keys WHERE key = :key "
                                  "(select(OrderKey.order_id).where(...)); None if no row")

    def remember_key(self, db: Connection, request: OrderRequest, order_id: int) -> None:
        """Write ``request.key`` beside the order it made (in the caller's transaction)."""
        # TODO 2 (C44): INSERT the key's row: the key, the order's id, what was asked
        # (request.asked), and the time (utcnow()). Its primary key does the rest.
        raise NotImplementedError("TODO 2: INSERT INTO order_keys (key, order_id, request, "
                                  "created_at): insert(OrderKey).values(...)")

    def load_order(self, db: Connection, order_id: int) -> PlacedOrder:
        """The order ``order_id`` as the shop answers it."""
        row = db.execute(select(Order.__table__).where(Order.id == order_id)).one()
        return PlacedOrder(**row._asdict())
