"""The order path on SQLite, PostgreSQL and MariaDB, with threads of one process.

The business delay makes the race certain: every buyer starts together (a
barrier) and the delay is far longer than a read, so unguarded buyers all
read the same stock before anyone writes.
"""

from __future__ import annotations

import pytest

import locks
from helpers import concurrent_sale
from shop.errors import SoldOut
from shop.orders.order_path import OrderContext, OrderRequest, pay_order, place_order
from shop.store.audit import take_audit
from shop.store.db import engine_of
from shop.store.models import ProductKind
from shop.store.products import ProductSpec, reset_products

BUYERS = 12
STOCK = 5


#: Far longer than a read, and than a first connection to MariaDB while the other test
#: workers keep the machine busy (at 150 ms one buyer of six once read after another had
#: written, and two seats were double-booked instead of one).
DELAY_MS = 400


def sale(sessions, strategy: str, requests: list[OrderRequest], delay_ms: int = DELAY_MS) -> dict:
    return concurrent_sale(sessions, strategy, requests, delay_ms,
                           all_read_first=strategy == "none")


def test_no_lock_oversells_items(sessions):
    reset_products(sessions, (ProductSpec("x", "x", ProductKind.ITEM, stock=STOCK),))
    outcome = sale(sessions, "none", [OrderRequest(1)] * BUYERS)
    audit = take_audit(sessions).products[0]
    assert outcome["ok"] == BUYERS  # everyone read stock 5 and bought
    assert audit.sold == BUYERS
    assert audit.oversold == BUYERS - STOCK
    assert audit.lost_updates == BUYERS - 1  # every read came before the first write
    assert not audit.correct


def test_no_lock_double_books_seats(sessions):
    reset_products(sessions, (ProductSpec("t", "t", ProductKind.TICKET, seats=("A1", "A2", "A3")),))
    sale(sessions, "none", [OrderRequest(1)] * 6)
    audit = take_audit(sessions).products[0]
    assert audit.double_booked_seats == 1  # all six picked the first free seat, A1
    assert not audit.correct


def test_local_lock_is_correct_within_one_process(sessions):
    reset_products(sessions, (ProductSpec("x", "x", ProductKind.ITEM, stock=STOCK),
                               ProductSpec("t", "t", ProductKind.TICKET, seats=("A1", "A2"))))
    outcome = sale(sessions, "local", [OrderRequest(1)] * BUYERS + [OrderRequest(2)] * 4,
                   delay_ms=20)
    audit = take_audit(sessions)
    assert outcome == {"ok": STOCK + 2, "refused": BUYERS - STOCK + 2}
    assert audit.correct, audit
    assert [p.remaining for p in audit.products] == [0, 0]


def test_named_seat_and_payment(sessions):
    reset_products(sessions, (ProductSpec("t", "t", ProductKind.TICKET, seats=("A1", "A2")),))
    factory = locks.open_factory("local")
    context = OrderContext("test", "local", 0, 1000)
    database = engine_of(sessions)
    order = place_order(database, factory, OrderRequest(1, seat="A2"), context)
    assert order.seat == "A2"
    assert place_order(database, factory, OrderRequest(1), context).seat == "A1"
    with pytest.raises(SoldOut):
        place_order(database, factory, OrderRequest(1), context)
    paid = pay_order(sessions, order.id)
    assert paid.status == "paid" and paid.paid_at is not None
    assert take_audit(sessions).correct
