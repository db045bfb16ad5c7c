"""A student's exercise 19, written from the skeleton: it must pass."""

import random
import time

from sqlalchemy import Connection, Engine, text

from shop.orders.custom_steps import OrderStep
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
    business_delay,
    check_fits,
    check_request,
    free_seats,
    insert_order,
)
from shop.orders.transactions import TooMuchContention
from shop.store.models import PlacedOrder, ProductKind

MAX_ATTEMPTS = 20


class OptimisticStep(OrderStep):
    """The order path with a version column: a conflict is a retry, never a sale."""

    family = "lock-free"

    def place(self, database: Engine, request: OrderRequest, context: OrderContext,
              kind: ProductKind | None = None, sleep=time.sleep) -> PlacedOrder:
        """One order, no lock: read, check, wait, and write only if nobody wrote since."""
        kind = kind or check_request(database, request)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            with database.begin() as db:
                version, stock = self.read_version_and_stock(db, request.product_id)
                free = free_seats(db, request.product_id) if kind is ProductKind.TICKET else []
            seat = check_fits(request, kind, stock, free)
            business_delay(context, sleep)  # the race window: another buyer may write meanwhile
            with database.begin() as db:
                new_stock = stock - request.quantity
                if self.write_if_unchanged(db, request.product_id, version, new_stock):
                    return insert_order(db, request, seat, context, attempts=attempt)
            sleep(random.uniform(0, 0.002 * 2 ** min(attempt, 6)))
        raise TooMuchContention(f"product {request.product_id}: {MAX_ATTEMPTS} attempts all "
                                "conflicted; try again")

    def read_version_and_stock(self, db: Connection, product_id: int) -> tuple[int, int]:
        """The product's version and stock, read together."""
        version, stock = db.execute(
            text("SELECT version, stock FROM products WHERE id = :product"),
            {"product": product_id}).one()
        return version, stock

    def write_if_unchanged(self, db: Connection, product_id: int, read_version: int,
                           new_stock: int) -> bool:
        """Write ``new_stock`` only if the version is still ``read_version``: True if it was."""
        written = db.execute(
            text("UPDATE products SET stock = :new_stock, version = :read_version + 1 "
                 "WHERE id = :product AND version = :read_version"),
            {"new_stock": new_stock, "read_version": read_version, "product": product_id})
        return written.rowcount == 1
