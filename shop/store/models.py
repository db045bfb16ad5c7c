"""The shop's tables: products, seats, orders and cluster-wide settings.

Times are stored as naive UTC: SQLite has no time zones, and one convention
on all three databases keeps the audit's arithmetic simple. They keep their
microseconds everywhere: MariaDB's DATETIME drops them unless asked, and then a
job's fire time read back no longer equals its own, holds a millisecond apart
look simultaneous, and a lease of 300 ms ends on the second.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def utc_at(seconds: float) -> datetime:
    """A moment as the database stores it (naive UTC), from ``time.time()`` seconds."""
    return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    type_annotation_map = {  # noqa: RUF012 - SQLAlchemy reads it from the class
        datetime: DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb"),
    }


class ProductKind(enum.StrEnum):
    ITEM = "item"      # a stock count
    TICKET = "ticket"  # named seats; the stock count is the number of free seats


class OrderStatus(enum.StrEnum):
    PENDING = "pending"
    PAID = "paid"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


#: Orders that hold stock (or a seat). Cancelled and expired ones gave it back.
LIVE_STATUSES = (OrderStatus.PENDING.value, OrderStatus.PAID.value)


class Product(Base):
    __tablename__ = "products"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sku: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))
    price_cents: Mapped[int] = mapped_column(Integer, default=0)
    #: Stock at the last reset: the audit's "initial".
    initial_stock: Mapped[int] = mapped_column(Integer)
    #: What the order path reads, checks and writes.
    stock: Mapped[int] = mapped_column(Integer)
    #: Bumped by every stock write of the optimistic strategy (compare-and-set).
    version: Mapped[int] = mapped_column(Integer, default=0)
    #: The newest fencing token a stock write carried: an older one is refused.
    #: 64-bit: Redis tokens carry an epoch (see locks.redis_support).
    fence: Mapped[int] = mapped_column(BigInteger, default=0)

    def as_dict(self) -> dict:
        return {"id": self.id, "sku": self.sku, "name": self.name, "kind": self.kind,
                "price_cents": self.price_cents, "initial_stock": self.initial_stock,
                "stock": self.stock, "version": self.version}


class Seat(Base):
    __tablename__ = "seats"
    __table_args__ = (UniqueConstraint("product_id", "label"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id", ondelete="CASCADE"))
    label: Mapped[str] = mapped_column(String(16))
    #: The order that took the seat. Only the atomic strategy relies on it
    #: (it claims a seat with "... WHERE order_id IS NULL"); the others write
    #: it blindly, so a double booking leaves the last writer here.
    order_id: Mapped[int | None] = mapped_column(Integer, default=None)


class Order(Base):
    __tablename__ = "orders"
    # Deliberately no unique constraint on (product_id, seat): the database
    # would then catch a double booking that the lock is supposed to prevent,
    # and the demo could not show the failure. The audit counts them instead.
    __table_args__ = (Index("ix_orders_product_status", "product_id", "status"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id", ondelete="CASCADE"))
    quantity: Mapped[int] = mapped_column(Integer)
    seat: Mapped[str | None] = mapped_column(String(16), default=None)
    status: Mapped[str] = mapped_column(String(16), default=OrderStatus.PENDING.value)
    #: Which instance took the order, and which strategy guarded it.
    instance: Mapped[str] = mapped_column(String(100))
    strategy: Mapped[str] = mapped_column(String(64))
    #: 1 + the retries it took (optimistic strategies retry on a conflict).
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    paid_at: Mapped[datetime | None] = mapped_column(default=None)

    def as_dict(self) -> dict:
        return order_as_dict(self)


@dataclass
class PlacedOrder:
    """An order as the order path wrote it: the row's values, without the ORM's
    bookkeeping (building a mapped ``Order`` costs more than inserting it)."""

    id: int
    product_id: int
    quantity: int
    seat: str | None
    status: str
    instance: str
    strategy: str
    attempts: int
    created_at: datetime
    paid_at: datetime | None = None

    def as_dict(self) -> dict:
        return order_as_dict(self)


def order_as_dict(order: Order | PlacedOrder) -> dict:
    """An order as the API shows it."""
    return {"id": order.id, "product_id": order.product_id, "quantity": order.quantity,
            "seat": order.seat, "status": order.status, "instance": order.instance,
            "strategy": order.strategy, "attempts": order.attempts,
            "created_at": order.created_at.isoformat() + "Z",
            "paid_at": order.paid_at.isoformat() + "Z" if order.paid_at else None}


class OrderKey(Base):
    """An ``Idempotency-Key`` a buyer sent with an order, written in the order's own
    transaction: the primary key lets one key make one order, whichever instance and
    strategy took it, and a retry finds the order here."""

    __tablename__ = "order_keys"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.id", ondelete="CASCADE"))
    #: What was asked, "product/quantity/seat": the same key for another request is refused.
    request: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class StaleWrite(Base):
    """A stock write refused because its fencing token was not the newest."""

    __tablename__ = "stale_writes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id", ondelete="CASCADE"))
    token: Mapped[int] = mapped_column(BigInteger)
    instance: Mapped[str] = mapped_column(String(100))
    strategy: Mapped[str] = mapped_column(String(64))
    at: Mapped[datetime] = mapped_column(default=utcnow)


class Setting(Base):
    """A cluster-wide setting every instance reads: one row per key."""

    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(255))


# --- what the scheduled jobs did (shop.jobs); the audit counts the duplicates -----

class JobRun(Base):
    """One run of a job for one fire time, on one instance: a run that was not skipped.

    Deliberately no unique (job, fire_time): two instances running the same
    fire time is the failure the audit must be able to count.
    """

    __tablename__ = "job_runs"
    __table_args__ = (Index("ix_job_runs_job_fire", "job", "fire_time"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job: Mapped[str] = mapped_column(String(64))
    #: The slot of the schedule this run is for (the same on every instance).
    fire_time: Mapped[datetime] = mapped_column()
    instance: Mapped[str] = mapped_column(String(100))
    #: The guard it ran under: a strategy's name, or "leader".
    guard: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: "done", or "lost" when its lock went before it wrote.
    outcome: Mapped[str] = mapped_column(String(16), default="running")
    #: Orders it expired or reminded.
    handled: Mapped[int] = mapped_column(Integer, default=0)

    def as_dict(self) -> dict:
        return {"id": self.id, "job": self.job, "fire_time": self.fire_time.isoformat() + "Z",
                "instance": self.instance, "guard": self.guard, "outcome": self.outcome,
                "handled": self.handled, "started_at": self.started_at.isoformat() + "Z"}


class StockRestoration(Base):
    """Stock given back by the expiry job for one order: more than one per order is the bug."""

    __tablename__ = "stock_restorations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    order_id: Mapped[int] = mapped_column(Integer, index=True)
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id", ondelete="CASCADE"))
    quantity: Mapped[int] = mapped_column(Integer)
    instance: Mapped[str] = mapped_column(String(100))
    at: Mapped[datetime] = mapped_column(default=utcnow)


class Reminder(Base):
    """A "please pay" message, as sent (nothing leaves the machine): one per order is right."""

    __tablename__ = "reminders"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    order_id: Mapped[int] = mapped_column(Integer, index=True)
    instance: Mapped[str] = mapped_column(String(100))
    text: Mapped[str] = mapped_column(String(255))
    at: Mapped[datetime] = mapped_column(default=utcnow)


class JobLock(Base):
    """The database's guard for a job, ShedLock's JDBC lock table: one row per job.

    A run takes the row with one conditional UPDATE, only when the lock is free
    (``locked_until`` has passed) and the row's fire time is earlier than the
    run's (no fire time runs twice). It holds it until it gives it back, or at
    most until ``locked_until``: the next fire time finds it taken and skips,
    where a unique (job, fire time) key would let it read the orders that the
    run before it is still working on.
    """

    __tablename__ = "job_locks"

    job: Mapped[str] = mapped_column(String(64), primary_key=True)
    fire_time: Mapped[datetime] = mapped_column()
    locked_until: Mapped[datetime] = mapped_column()
    instance: Mapped[str] = mapped_column(String(100))


class JobFence(Base):
    """The newest fencing token a run of a job has handed in, when a lock guards it:
    a run's write commits only while its token is still this one (``shop.jobs.guards``),
    as an order's stock write only with the newest token the product has seen."""

    __tablename__ = "job_fences"

    job: Mapped[str] = mapped_column(String(64), primary_key=True)
    token: Mapped[int] = mapped_column(BigInteger)

