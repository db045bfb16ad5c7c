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

The scheduled jobs (``shop.jobs.tasks``) get a section of their own:

* ``duplicate_runs``: runs beyond the first for one (job, fire time): the
  same work started on several instances;
* ``stock_restored_more_than_once``: expired orders whose stock came back
  more than once (the extra units are also counted by ``lost_updates``,
  whose stock no longer adds up);
* ``duplicate_reminders``: reminders beyond the first for one order;
* ``lost_runs``: runs that stopped before writing because their guard was
  lost: a safety that worked, not an error.

The audit is correct when the sale is, and no stock was restored twice and
no customer reminded twice. A duplicate run that found nothing to do harms
no one; it is shown, and makes ``jobs.correct`` false.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from shop.store.models import (
    LIVE_STATUSES,
    JobRun,
    Order,
    Product,
    Reminder,
    StaleWrite,
    StockRestoration,
)


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
class JobsAudit:
    runs: int = 0
    fire_times: int = 0
    duplicate_runs: int = 0
    lost_runs: int = 0
    orders_expired: int = 0
    stock_restored_more_than_once: int = 0
    reminders: int = 0
    duplicate_reminders: int = 0

    @property
    def harmless(self) -> bool:
        """No stock given back twice, no customer reminded twice."""
        return self.stock_restored_more_than_once == 0 and self.duplicate_reminders == 0

    @property
    def correct(self) -> bool:
        return self.harmless and self.duplicate_runs == 0


@dataclass(frozen=True)
class Audit:
    products: tuple[ProductAudit, ...]
    jobs: JobsAudit = JobsAudit()

    @property
    def correct(self) -> bool:
        return all(p.correct for p in self.products) and self.jobs.harmless

    def total(self, field: str) -> int:
        return sum(getattr(p, field) for p in self.products)

    def as_dict(self) -> dict:
        totals = {f: self.total(f) for f in
                  ("initial", "remaining", "sold", "orders", "oversold", "lost_updates",
                   "double_booked_seats", "retries", "stale_writes_rejected")}
        return {"correct": self.correct, "totals": totals,
                "products": [dict(asdict(p), correct=p.correct) for p in self.products],
                "jobs": dict(asdict(self.jobs), correct=self.jobs.correct)}


def take_audit(sessions: sessionmaker[Session]) -> Audit:
    """Audit every product, from one snapshot so the figures agree with each other."""
    with sessions.begin() as session:
        if session.get_bind().dialect.name != "sqlite":
            # One transaction is not enough: under READ COMMITTED (PostgreSQL's default)
            # each statement sees what was committed before it began, and an order
            # expired between two reads shows as stock that vanished. SQLite's read
            # transaction is a snapshot already.
            session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        products = session.execute(select(Product).order_by(Product.id)).scalars().all()
        sales = _live_sales(session)
        double_booked = _double_booked_seats(session)
        stale = dict(session.execute(select(StaleWrite.product_id, func.count())
                                     .group_by(StaleWrite.product_id)).all())
        jobs = _jobs(session)
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
    return Audit(tuple(audits), jobs)


def _jobs(session: Session) -> JobsAudit:
    runs = session.scalar(select(func.count()).select_from(JobRun))
    fire_times = session.scalar(select(func.count()).select_from(
        select(JobRun.job, JobRun.fire_time).distinct().subquery()))
    restorations = _beyond_the_first(session, StockRestoration.order_id)
    return JobsAudit(
        runs=runs, fire_times=fire_times, duplicate_runs=runs - fire_times,
        lost_runs=session.scalar(select(func.count()).where(JobRun.outcome == "lost")),
        orders_expired=session.scalar(select(func.count(StockRestoration.order_id.distinct()))),
        stock_restored_more_than_once=restorations,
        reminders=session.scalar(select(func.count()).select_from(Reminder)),
        duplicate_reminders=_beyond_the_first(session, Reminder.order_id))


def _beyond_the_first(session: Session, column) -> int:
    """Rows beyond the first per value of ``column``."""
    per_value = (select(func.count().label("n")).select_from(column.table)
                 .group_by(column).subquery())
    return int(session.scalar(select(func.coalesce(func.sum(per_value.c.n - 1), 0))))


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
