"""The audit: what really happened, read from the database alone.

Never from the load tool's counts: a client that timed out may still have
bought something, and a client that got 201 may have had its stock decrement
overwritten. Per product:

* ``sold``: units in live orders (pending or paid; cancelled and expired
  orders gave their stock back);
* ``oversold = sold - initial`` when positive: more sold than there was;
* ``lost_updates = sold - (initial - remaining)``: sales whose decrement of
  the stock was overwritten by a concurrent write. Zero when every sale took
  exactly its quantity off the stock;
* ``double_booked_seats``: seats held by more than one live order;
* ``retries``: extra attempts the live orders needed (optimistic strategies
  retry on a conflict); a cost, not an error;
* ``stale_writes_rejected``: writes that fencing refused because their lock
  had expired and a newer holder had written; each one is an oversell that
  did not happen.

A run is correct when all of them are zero and no stock is negative.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from .models import LIVE_STATUSES, Order, Product, StaleWrite


@dataclass(frozen=True)
class ProductAudit:
    product_id: int
    sku: str
    kind: str
    initial: int
    remaining: int
    sold: int
    orders: int
    oversold: int
    lost_updates: int
    double_booked_seats: int
    retries: int = 0
    stale_writes_rejected: int = 0

    @property
    def correct(self) -> bool:
        return (self.oversold == 0 and self.lost_updates == 0
                and self.double_booked_seats == 0 and self.remaining >= 0)


@dataclass(frozen=True)
class Audit:
    products: tuple[ProductAudit, ...]

    @property
    def correct(self) -> bool:
        return all(p.correct for p in self.products)

    def total(self, field: str) -> int:
        return sum(getattr(p, field) for p in self.products)

    def as_dict(self) -> dict:
        totals = {f: self.total(f) for f in
                  ("initial", "remaining", "sold", "orders", "oversold", "lost_updates",
                   "double_booked_seats", "retries", "stale_writes_rejected")}
        return {"correct": self.correct, "totals": totals,
                "products": [dict(asdict(p), correct=p.correct) for p in self.products]}


def take_audit(sessions: sessionmaker[Session]) -> Audit:
    """Audit every product, in one transaction so the figures agree with each other."""
    with sessions.begin() as session:
        products = session.execute(select(Product).order_by(Product.id)).scalars().all()
        sales = _live_sales(session)
        double_booked = _double_booked_seats(session)
        stale = dict(session.execute(select(StaleWrite.product_id, func.count())
                                     .group_by(StaleWrite.product_id)).all())
    audits = []
    for p in products:
        sold, orders, retries = sales.get(p.id, (0, 0, 0))
        audits.append(ProductAudit(
            product_id=p.id, sku=p.sku, kind=p.kind, initial=p.initial_stock,
            remaining=p.stock, sold=sold, orders=orders,
            oversold=max(0, sold - p.initial_stock),
            lost_updates=sold - (p.initial_stock - p.stock),
            double_booked_seats=double_booked.get(p.id, 0), retries=retries,
            stale_writes_rejected=int(stale.get(p.id, 0))))
    return Audit(tuple(audits))


def _live_sales(session: Session) -> dict[int, tuple[int, int, int]]:
    """Per product: units sold, orders, and retries, over live orders."""
    rows = session.execute(
        select(Order.product_id, func.coalesce(func.sum(Order.quantity), 0), func.count(),
               func.coalesce(func.sum(Order.attempts - 1), 0))
        .where(Order.status.in_(LIVE_STATUSES)).group_by(Order.product_id))
    return {product_id: (int(units), int(count), int(retries))
            for product_id, units, count, retries in rows}


def _double_booked_seats(session: Session) -> dict[int, int]:
    booked_twice = (
        select(Order.product_id, Order.seat)
        .where(Order.status.in_(LIVE_STATUSES), Order.seat.is_not(None))
        .group_by(Order.product_id, Order.seat)
        .having(func.count() > 1)
        .subquery())
    rows = session.execute(select(booked_twice.c.product_id, func.count())
                           .group_by(booked_twice.c.product_id))
    return {product_id: int(n) for product_id, n in rows}
