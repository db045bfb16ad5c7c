"""The products for sale, and the reset that restores them.

A reset is what starts every lab and every load run: it deletes all orders,
products and seats and writes the products again, with ids 1, 2, 3, … so that
"product 1" means the same thing after every reset.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from sqlalchemy import delete, insert
from sqlalchemy.orm import Session, sessionmaker

from shop.store.models import (
    JobFence,
    JobRun,
    Order,
    OrderKey,
    Product,
    ProductKind,
    Reminder,
    Seat,
    StaleWrite,
    StockRestoration,
)

MAX_PRODUCTS = 100
MAX_STOCK = 1_000_000
MAX_SEATS = 1_000
SEATS_PER_ROW = 10
SKU_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class ProductSpec:
    sku: str
    name: str
    kind: ProductKind
    stock: int = 0               # items
    seats: tuple[str, ...] = ()  # tickets
    price_cents: int = 0

    @property
    def initial_stock(self) -> int:
        return len(self.seats) if self.kind is ProductKind.TICKET else self.stock


DEFAULT_PRODUCTS: tuple[ProductSpec, ...] = (
    ProductSpec("keyboard", "Mechanical keyboard", ProductKind.ITEM, stock=100, price_cents=8900),
    ProductSpec("mug", "Lockshop mug", ProductKind.ITEM, stock=50, price_cents=1200),
    ProductSpec("concert", "Concert, rows A-D", ProductKind.TICKET,
                seats=tuple(f"{row}{n}" for row in "ABCD" for n in range(1, SEATS_PER_ROW + 1)),
                price_cents=4500),
)


def seat_labels(count: int) -> tuple[str, ...]:
    """A1..A10, B1..B10, …, Z10, AA1, …: ``count`` seat labels in rows of ten."""
    return tuple(f"{_row_name(i // SEATS_PER_ROW)}{i % SEATS_PER_ROW + 1}" for i in range(count))


def _row_name(row: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA, as spreadsheet columns are named."""
    name = ""
    row += 1
    while row:
        row, rest = divmod(row - 1, 26)
        name = string.ascii_uppercase[rest] + name
    return name


def reset_products(sessions: sessionmaker[Session],
                    specs: tuple[ProductSpec, ...] = DEFAULT_PRODUCTS) -> None:
    """Delete every order, product and seat; write ``specs`` with ids 1..n."""
    with sessions.begin() as session:
        session.execute(delete(StaleWrite))
        for table in (JobRun, StockRestoration, Reminder):  # not job_locks: a run may hold one
            session.execute(delete(table))
        # Fencing starts afresh, as the products' new rows do (a run in progress stops).
        session.execute(delete(JobFence))
        session.execute(delete(OrderKey))
        session.execute(delete(Order))
        session.execute(delete(Seat))
        session.execute(delete(Product))
        for product_id, spec in enumerate(specs, start=1):
            session.execute(insert(Product).values(
                id=product_id, sku=spec.sku, name=spec.name, kind=spec.kind.value,
                price_cents=spec.price_cents, initial_stock=spec.initial_stock,
                stock=spec.initial_stock, version=0, fence=0))
            if spec.seats:
                session.execute(insert(Seat), [{"product_id": product_id, "label": label}
                                               for label in spec.seats])
