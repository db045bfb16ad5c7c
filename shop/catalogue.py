"""The catalogue and the reset that restores it.

A reset is what starts every lab and every load run: it deletes all orders,
products and seats and writes the catalogue again, with ids 1, 2, 3, … so that
"product 1" means the same thing after every reset.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from sqlalchemy import delete, insert
from sqlalchemy.orm import Session, sessionmaker

from .errors import BadRequest, Unprocessable
from .models import (JobClaim, JobRun, Order, Product, ProductKind, Reminder, Seat, StaleWrite,
                     StockRestoration)

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


DEFAULT_CATALOGUE: tuple[ProductSpec, ...] = (
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


def reset_catalogue(sessions: sessionmaker[Session],
                    specs: tuple[ProductSpec, ...] = DEFAULT_CATALOGUE) -> None:
    """Delete every order, product and seat; write ``specs`` with ids 1..n."""
    with sessions.begin() as session:
        session.execute(delete(StaleWrite))
        for table in (JobRun, JobClaim, StockRestoration, Reminder):
            session.execute(delete(table))
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


# --- reading a catalogue from a request --------------------------------------

def parse_catalogue(raw: object) -> tuple[ProductSpec, ...]:
    """Specs from a JSON list; ``BadRequest``/``Unprocessable`` say what is wrong."""
    if not isinstance(raw, list):
        raise BadRequest("'products' must be a list of products")
    if not 1 <= len(raw) <= MAX_PRODUCTS:
        raise Unprocessable(f"'products' must hold 1 to {MAX_PRODUCTS} products, got {len(raw)}")
    specs = tuple(_parse_product(i, item) for i, item in enumerate(raw))
    skus = [spec.sku for spec in specs]
    if len(set(skus)) != len(skus):
        raise Unprocessable("every product needs its own 'sku'")
    return specs


def _parse_product(index: int, item: object) -> ProductSpec:
    where = f"products[{index}]"
    if not isinstance(item, dict):
        raise BadRequest(f"{where} must be an object")
    allowed = {"sku", "name", "kind", "stock", "seats", "price_cents"}
    unknown = sorted(set(item) - allowed)
    if unknown:
        raise BadRequest(f"{where} has unknown fields: {', '.join(unknown)}")
    sku = item.get("sku")
    if not isinstance(sku, str) or not SKU_PATTERN.match(sku):
        raise BadRequest(f"{where}.sku must be 1-64 letters, digits, '_', '.' or '-'")
    name = item.get("name", sku)
    if not isinstance(name, str) or not 1 <= len(name) <= 200:
        raise BadRequest(f"{where}.name must be a string of 1-200 characters")
    kind_raw = item.get("kind", "item")
    try:
        kind = ProductKind(kind_raw)
    except ValueError:
        raise Unprocessable(f"{where}.kind must be 'item' or 'ticket', got {kind_raw!r}") from None
    price = _bounded_int(item.get("price_cents", 0), f"{where}.price_cents", 0, 10**9)
    if kind is ProductKind.ITEM:
        if "seats" in item:
            raise Unprocessable(f"{where} is an item: give 'stock', not 'seats'")
        stock = _bounded_int(item.get("stock", 0), f"{where}.stock", 0, MAX_STOCK)
        return ProductSpec(sku, name, kind, stock=stock, price_cents=price)
    if "stock" in item:
        raise Unprocessable(f"{where} is a ticket: give 'seats' (a count or labels), not 'stock'")
    return ProductSpec(sku, name, kind, seats=_parse_seats(item.get("seats", 40), where),
                       price_cents=price)


def _parse_seats(raw: object, where: str) -> tuple[str, ...]:
    if isinstance(raw, list):
        if not 1 <= len(raw) <= MAX_SEATS or not all(
                isinstance(s, str) and SKU_PATTERN.match(s) and len(s) <= 16 for s in raw):
            raise Unprocessable(f"{where}.seats must list 1-{MAX_SEATS} labels of up to 16 "
                                "letters and digits")
        if len(set(raw)) != len(raw):
            raise Unprocessable(f"{where}.seats has the same label twice")
        return tuple(raw)
    return seat_labels(_bounded_int(raw, f"{where}.seats", 1, MAX_SEATS))


def _bounded_int(value: object, where: str, low: int, high: int) -> int:
    # bool is an int in Python; a JSON 'true' is still not a count.
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest(f"{where} must be a whole number")
    if not low <= value <= high:
        raise Unprocessable(f"{where} must be between {low} and {high}, got {value}")
    return value
