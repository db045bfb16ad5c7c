"""The order path's steps, taken one at a time by a lab, on product 1 (an item): read
the stock, then sell one unit by writing what was read less one.

A lab that must put a pause, a kill or a second holder between the read and
the write takes the steps itself; everything else sells through the strategy.
"""

from __future__ import annotations

import time

from shop.errors import StaleWriteRejected
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
    insert_order,
    read_stock,
    write_stock,
)
from shop.store.audit import take_audit
from shop.store.db import engine_of
from shop.store.models import ProductKind
from shop.i18n import N_, _, yes_no

CONTEXT = OrderContext("lab", "lab", business_delay_ms=0, lock_timeout_ms=1000)


def read(sessions) -> int:
    """Step 1: the stock of product 1."""
    with engine_of(sessions).begin() as db:
        return read_stock(db, 1, ProductKind.ITEM)[0]


def sell(sessions, stock_read: int, fencing_token: int | None = None) -> str:
    """Steps 4 and 5: write ``stock_read - 1`` (fenced when a token is given) and insert
    the order, in one transaction. "written", or "refused as stale" by fencing."""
    try:
        with engine_of(sessions).begin() as db:
            write_stock(db, 1, stock_read - 1, fencing_token=fencing_token)
            insert_order(db, OrderRequest(1), None, CONTEXT)
        return "written"
    except StaleWriteRejected:
        return "refused as stale"


def late_write(run, sessions, stock_read: int, fencing_token: int | None, *, action: str,
               refused: str) -> None:
    """The holder that lost its lock (a lease run out, a session ended, a failover)
    writes what it computed before: with no token it overwrites the sale made since
    (one update lost); with its token it is refused, and ``refused`` says why."""
    outcome = sell(sessions, stock_read, fencing_token)
    product = take_audit(sessions).products[0]
    observed = _("A's write %(outcome)s; sold %(sold)s, stock %(stock)s, lost updates "
                 "%(lost)s", outcome=said(outcome), sold=product.sold,
                 stock=product.remaining, lost=product.lost_updates)
    if fencing_token is None:
        run.check(action, expected=_("written over B's sale: 2 sold, stock 4, one update lost"),
                  observed=observed, agrees=outcome == "written" and product.lost_updates == 1)
    else:
        run.check(action, expected=_("refused as stale: 1 sold, stock 4, nothing lost; "
                                     "%(why)s", why=refused),
                  observed=observed, agrees=outcome == "refused as stale"
                  and product.lost_updates == 0 and product.sold == 1)


#: The outcomes the labs' steps compare in English (a write sold or refused, a lock asked
#: for, a holder's check), as an observation says them; anything else (an error's name
#: and message) is shown as raised.
OUTCOMES = {"written": N_("written"), "refused as stale": N_("refused as stale"),
            "acquired": N_("acquired"), "refused": N_("refused"),
            "still held": N_("still held"), "held": N_("holding the lock")}


def said(outcome: str) -> str:
    """An outcome in the reader's language."""
    return _(OUTCOMES[outcome]) if outcome in OUTCOMES else outcome


def asked(acquired: bool, seconds: float, digits: int = 2) -> str:
    """What an ask for a lock came to, as a step's observation says it."""
    return _("acquired: %(got)s after %(seconds)s s", got=yes_no(acquired),
             seconds=f"{seconds:.{digits}f}")


def timed_acquire(lock, blocking: bool = True) -> tuple[bool, float]:
    """Ask for ``lock``: (granted, seconds it took to say so)."""
    started = time.monotonic()
    granted = lock.acquire(blocking=blocking)
    return granted, time.monotonic() - started
