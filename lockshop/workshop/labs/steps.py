"""The order path's steps, taken one at a time by a lab, on product 1 (an item): read
the stock, then sell one unit by writing what was read less one.

A lab that must put a pause, a kill or a second holder between the read and
the write takes the steps itself; everything else sells through the strategy.
"""

from __future__ import annotations

from shop.errors import StaleWriteRejected
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
    insert_order,
    read_stock,
    write_stock,
)
from shop.store.models import ProductKind

CONTEXT = OrderContext("lab", "lab", business_delay_ms=0, lock_timeout_ms=1000)


def read(sessions) -> int:
    """Step 1: the stock of product 1."""
    with sessions.begin() as session:
        return read_stock(session, 1, ProductKind.ITEM)[0]


def sell(sessions, stock_read: int, fencing_token: int | None = None) -> str:
    """Steps 4 and 5: write ``stock_read - 1`` (fenced when a token is given) and insert
    the order, in one transaction. "written", or "refused as stale" by fencing."""
    try:
        with sessions.begin() as session:
            write_stock(session, 1, stock_read - 1, fencing_token=fencing_token)
            insert_order(session, OrderRequest(1), None, CONTEXT)
        return "written"
    except StaleWriteRejected:
        return "refused as stale"
