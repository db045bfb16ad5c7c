"""Exercise 19: optimistic locking. A version column, and a write that checks it.

Article A1, section "基于表字段版本号做分布式锁" (a lock by a version column):
no lock at all. Read the stock AND the product's version; check; do the slow
part; then write only if the version is still the one you read, and bump it
in the same UPDATE. If another buyer wrote in between, your UPDATE changes
no row: that is a conflict, and a conflict becomes a retry (read again,
check again), never a sale on stale figures (lesson C07). A1 also names the
price: a version column in every table it guards, and more statements per
order, which under heavy contention means retries.

Check it:   ./run exercise check 19 optimistic_order.py
The grader runs your order step inside three shop instances selling at once,
and on its own: two buyers made to read the same version before either
writes. It needs nothing from your code to find that moment.

The tables (SQLite here; the same SQL runs on PostgreSQL):
    products(id, stock, version, ...)   one row per product
Run SQL on a connection ``db`` with ``db.execute(text("... :name ..."), {"name": value})``;
``.one()`` gives the row, ``.rowcount`` how many rows an UPDATE changed.
"""

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
            # TODO 3 (A1, the version column): nothing was written, because another buyer
            # wrote after our read. Do not sell on what we read: wait a little (a random
            # few milliseconds, longer each attempt: sleep(...)) and go round the loop again.
            raise NotImplementedError("TODO 3: a conflict is a retry: sleep a jittered moment "
                                      "and read again (continue the loop)")
        raise TooMuchContention(f"product {request.product_id}: {MAX_ATTEMPTS} attempts all "
                                "conflicted; try again")

    def read_version_and_stock(self, db: Connection, product_id: int) -> tuple[int, int]:
        """The product's version and stock, read together."""
        # TODO 1 (A1): ONE statement that reads both columns of the product's row: read
        # apart, the stock could be newer than the version you compare against later.
        raise NotImplementedError("TODO 1: SELECT version, stock FROM products WHERE id = "
                                  ":product, in one statement; return (version, stock)")

    def write_if_unchanged(self, db: Connection, product_id: int, read_version: int,
                           new_stock: int) -> bool:
        """Write ``new_stock`` only if the version is still ``read_version``: True if it was."""
        # TODO 2 (A1): ONE UPDATE that sets the new stock and the next version WHERE the
        # version is still the one you read; then say whether it changed the row.
        raise NotImplementedError("TODO 2: UPDATE products SET stock = :new_stock, version = "
                                  ":read_version + 1 WHERE id = :product AND version = "
                                  ":read_version; True if it changed one row")
