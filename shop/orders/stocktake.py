"""The stocktake: count one product the slow way, as a back-office report does.

It reads the shelf (the stock) and then the sales book (units in live
orders) in two separate reads, with the business delay between them, and
checks that they add up: ``stock + sold == initial``. A sale that commits
between the two reads makes the count come out wrong by that sale: a torn
read, though nothing is wrong in the database.

So the stocktake must exclude sales, but it need not exclude other
stocktakes: it takes the product's *read* lock. Under ``zk_rw`` readers
share that lock while sales (which take the write lock) wait; under every
other lock strategy the read lock is the exclusive lock, so stocktakes also
queue behind each other. Transaction strategies have no lock to take: the
stocktake then reads both figures in one transaction, a snapshot the
database keeps consistent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from locks import LockFactory, LockNotAcquired
from shop.errors import NotFound
from shop.i18n import lazy_gettext
from shop.orders.order_path import OrderContext, business_delay, lock_name
from shop.store.models import LIVE_STATUSES, Order, Product


@dataclass(frozen=True)
class Stocktake:
    product_id: int
    initial: int
    stock: int
    sold: int
    strategy: str
    #: "shared" (a read lock readers share), "exclusive", "none" (no lock at all),
    #: or "snapshot" (one transaction).
    read_lock: str

    @property
    def consistent(self) -> bool:
        return self.stock + self.sold == self.initial

    def as_dict(self) -> dict:
        return {**asdict(self), "consistent": self.consistent}


def take_stocktake(sessions: sessionmaker[Session], lock_factory: LockFactory | None,
                   product_id: int, context: OrderContext,
                   sleep: Callable[[float], None] = time.sleep) -> Stocktake:
    """Count ``product_id`` under a read lock from ``lock_factory`` (one transaction when
    it is None: a transaction strategy)."""
    if lock_factory is None:
        with sessions.begin() as session:
            initial, stock = _shelf(session, product_id)
            return Stocktake(product_id, initial, stock, _sold(session, product_id),
                             context.strategy, "snapshot")
    lock = lock_factory.read_lock(lock_name(product_id), timeout=context.lock_timeout_ms / 1000)
    if not lock.acquire():
        raise LockNotAcquired(lock.name, lock.default_timeout)
    try:
        with sessions.begin() as session:
            initial, stock = _shelf(session, product_id)
        business_delay(context, sleep)  # a slow report: the window a sale could slip into
        with sessions.begin() as session:
            sold = _sold(session, product_id)
    finally:
        lock.release()
    return Stocktake(product_id, initial, stock, sold, context.strategy,
                     "shared" if lock_factory.shared_reads else
                     "exclusive" if lock_factory.excludes else "none")


def _shelf(session: Session, product_id: int) -> tuple[int, int]:
    row = session.execute(select(Product.initial_stock, Product.stock)
                          .where(Product.id == product_id)).one_or_none()
    if row is None:
        raise NotFound(lazy_gettext("product %(product)s not found", product=product_id))
    return row.initial_stock, row.stock


def _sold(session: Session, product_id: int) -> int:
    return session.scalar(select(func.coalesce(func.sum(Order.quantity), 0)).where(
        Order.product_id == product_id, Order.status.in_(LIVE_STATUSES)))
