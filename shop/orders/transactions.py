"""Transaction strategies: the database guards the order path itself.

Each runs the order in ONE transaction, so nothing is released before the
commit: the row lock and the advisory lock end with the transaction, and a
compare-and-set or conditional UPDATE is atomic by construction.

* ``for_update``: ``SELECT stock ... FOR UPDATE`` locks the product row until
  commit; a second buyer's SELECT waits. InnoDB locks *index records*: the
  primary key makes this a single-row lock, whereas a FOR UPDATE on an
  unindexed column would lock every row it scans. SQLite has no row locks;
  its equivalent is ``BEGIN IMMEDIATE``, which takes the database's write
  lock up front, so the read that follows already excludes other writers.
* ``pg_advisory``: ``pg_advisory_xact_lock(class, product)``, a lock on a
  number that PostgreSQL releases at commit or rollback. PostgreSQL only:
  MySQL's ``GET_LOCK`` is held by the session, not the transaction, and
  SQLite has nothing of the kind, so the strategy refuses other databases.
* ``optimistic``: no lock. Read stock and version, and write with
  ``... WHERE version = :read``; zero rows updated means someone sold in
  between, so read again and retry (bounded, with jittered backoff). The
  attempts are stored with the order, so the audit can count retries.
* ``atomic``: "you may not need a lock". ``UPDATE ... SET stock = stock - :q
  WHERE stock >= :q`` checks and writes in one statement; a seat is claimed
  with ``UPDATE seats SET order_id = :id WHERE ... AND order_id IS NULL``.

Lock waits are bounded by the shop's lock timeout (``lock_timeout`` on
PostgreSQL, ``innodb_lock_wait_timeout`` on MariaDB, the busy timeout on
SQLite); a wait that runs out is a 503, as for every other lock.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, bindparam, func, select, text, update
from sqlalchemy.exc import OperationalError

from locks import LockNotAcquired
from locks import metrics as lock_metrics
from shop.errors import SeatTaken, ServiceUnavailable, SoldOut
from shop.i18n import lazy_gettext
from shop.metrics import counters
from shop.orders.order_path import (
    STOCK_FOR_UPDATE,
    OrderContext,
    OrderRequest,
    business_delay,
    check_fits,
    check_request,
    free_seats,
    insert_order,
    lock_name,
    read_stock,
    write_stock,
)
from shop.store.db import SQLITE_BEGIN, SQLITE_BUSY_MS
from shop.store.models import Order, PlacedOrder, Product, ProductKind, Seat

Sleep = Callable[[float], None]

#: First number of pg_advisory_xact_lock(class, object): "LS", lockshop's own.
ADVISORY_CLASS = 0x4C53
OPTIMISTIC_MAX_ATTEMPTS = 20


class TooMuchContention(ServiceUnavailable):
    code = "too_much_contention"


def place_for_update(database: Engine, request: OrderRequest, context: OrderContext,
                     kind: ProductKind | None = None, sleep: Sleep = time.sleep) -> PlacedOrder:
    kind = kind or check_request(database, request)
    with TransactionLock(request, context) as lock:
        with locking_transaction(database, context) as db:
            stock, free = read_stock(db, request.product_id, kind, for_update=True)
            lock.acquired()
            seat = check_fits(request, kind, stock, free)
            business_delay(context, sleep)  # the row stays locked meanwhile
            write_stock(db, request.product_id, stock - request.quantity)
            order = insert_order(db, request, seat, context)
        # the commit released the row lock
    return order


ADVISORY_LOCK = select(func.pg_advisory_xact_lock(ADVISORY_CLASS, bindparam("product")))


def place_pg_advisory(database: Engine, request: OrderRequest, context: OrderContext,
                      kind: ProductKind | None = None, sleep: Sleep = time.sleep) -> PlacedOrder:
    kind = kind or check_request(database, request)
    with TransactionLock(request, context) as lock:
        with locking_transaction(database, context) as db:
            db.execute(ADVISORY_LOCK, {"product": request.product_id})
            lock.acquired()
            # Under READ COMMITTED each statement sees what was committed
            # before it began, so this read comes after the last holder's write.
            stock, free = read_stock(db, request.product_id, kind)
            seat = check_fits(request, kind, stock, free)
            business_delay(context, sleep)
            write_stock(db, request.product_id, stock - request.quantity)
            order = insert_order(db, request, seat, context)
        # the commit released the advisory lock
    return order


# Version and stock in ONE statement, and before the seats: under READ
# COMMITTED (PostgreSQL's default) every statement sees a new snapshot, so
# reading them separately can pair an old stock with a new version, and the
# compare-and-set then writes a stale stock.
VERSION_AND_STOCK = select(Product.version, Product.stock).where(Product.id == bindparam("product"))
# Compare-and-set: any sale since our read has bumped the version (for a
# ticket too, so the seat we chose is still free).
WRITE_IF_UNCHANGED = (update(Product)
                      .where(Product.id == bindparam("product"),
                             Product.version == bindparam("read_version"))
                      .values(stock=bindparam("new_stock"), version=bindparam("new_version")))


def place_optimistic(database: Engine, request: OrderRequest, context: OrderContext,
                     kind: ProductKind | None = None, sleep: Sleep = time.sleep) -> PlacedOrder:
    kind = kind or check_request(database, request)
    for attempt in range(1, OPTIMISTIC_MAX_ATTEMPTS + 1):
        with database.begin() as db:
            version, stock = db.execute(
                VERSION_AND_STOCK, {"product": request.product_id}).one_or_none() or (None, None)
            free = free_seats(db, request.product_id) if kind is ProductKind.TICKET else []
        seat = check_fits(request, kind, stock, free)
        business_delay(context, sleep)
        with database.begin() as db:
            written = db.execute(WRITE_IF_UNCHANGED, {
                "product": request.product_id, "read_version": version,
                "new_stock": stock - request.quantity, "new_version": version + 1})
            if written.rowcount == 1:
                return insert_order(db, request, seat, context, attempts=attempt)
        # Lost the race: back off a little (jittered, growing) and read again.
        counters.add("retries", strategy=context.strategy)
        sleep(random.uniform(0, 0.002 * 2 ** min(attempt, 6)))
    raise TooMuchContention(lazy_gettext(
        "product %(product)s: %(attempts)s attempts all conflicted; try again",
        product=request.product_id, attempts=OPTIMISTIC_MAX_ATTEMPTS),
        attempts=OPTIMISTIC_MAX_ATTEMPTS)


TAKE_STOCK = (update(Product)
              .where(Product.id == bindparam("product"), Product.stock >= bindparam("quantity"))
              .values(stock=Product.stock - bindparam("quantity")))


def place_atomic(database: Engine, request: OrderRequest, context: OrderContext,
                 kind: ProductKind | None = None, sleep: Sleep = time.sleep) -> PlacedOrder:
    kind = kind or check_request(database, request)
    business_delay(context, sleep)  # the business step still takes its time; nothing is held
    with database.begin() as db:
        taken = db.execute(TAKE_STOCK, {"product": request.product_id,
                                        "quantity": request.quantity})
        if taken.rowcount != 1:
            raise SoldOut(lazy_gettext("product %(product)s is sold out",
                                       product=request.product_id))
        if kind is ProductKind.ITEM:
            return insert_order(db, request, None, context)
        return _claim_a_seat(db, request, context)


FREE_SEAT_LABELS = (select(Seat.label)
                    .where(Seat.product_id == bindparam("product"), Seat.order_id.is_(None))
                    .order_by(Seat.id))
CLAIM_SEAT_IF_FREE = (update(Seat)
                      .where(Seat.product_id == bindparam("product"),
                             Seat.label == bindparam("seat"), Seat.order_id.is_(None))
                      .values(order_id=bindparam("order")))
SET_ORDER_SEAT = update(Order).where(Order.id == bindparam("order")).values(seat=bindparam("seat"))


def _claim_a_seat(db: Connection, request: OrderRequest,
                  context: OrderContext) -> PlacedOrder:
    """Insert the order, then claim the named seat or the first one nobody holds."""
    order = insert_order(db, request, None, context)
    candidates = [request.seat] if request.seat else list(
        db.scalars(FREE_SEAT_LABELS, {"product": request.product_id}))
    for label in candidates:
        claim = {"product": request.product_id, "seat": label, "order": order.id}
        if db.execute(CLAIM_SEAT_IF_FREE, claim).rowcount == 1:
            db.execute(SET_ORDER_SEAT, {"order": order.id, "seat": label})
            order.seat = label
            return order
    # Raising rolls back the stock decrement and the order with it.
    if request.seat:
        raise SeatTaken(lazy_gettext("seat %(seat)s is taken", seat=request.seat),
                        seat=request.seat)
    raise SoldOut(lazy_gettext("product %(product)s has no free seat",
                               product=request.product_id), remaining=0)


# --- bounded lock waits ---------------------------------------------------------------

@contextmanager
def locking_transaction(database: Engine, context: OrderContext) -> Iterator[Connection]:
    """A transaction whose waits for a database lock end after the shop's lock timeout."""
    with database.connect() as db:
        dialect = db.dialect.name
        if dialect == "sqlite":
            # No row locks: BEGIN IMMEDIATE takes the database's write lock first.
            db.execution_options(**{SQLITE_BEGIN: "IMMEDIATE",
                                    SQLITE_BUSY_MS: context.lock_timeout_ms})
        with db.begin():
            if dialect == "postgresql":
                db.execute(text(f"SET LOCAL lock_timeout = '{int(context.lock_timeout_ms)}ms'"))
            elif dialect != "sqlite":  # MySQL / MariaDB: whole seconds, per connection
                seconds = max(1, math.ceil(context.lock_timeout_ms / 1000))
                db.execute(text(f"SET SESSION innodb_lock_wait_timeout = {seconds}"))
            yield db


class TransactionLock:
    """A lock the database holds for a transaction: times its wait and hold for
    the metrics, and turns "lock wait timed out" into ``LockNotAcquired`` (503)."""

    def __init__(self, request: OrderRequest, context: OrderContext) -> None:
        self.name = lock_name(request.product_id)
        self.strategy = context.strategy
        self.timeout = context.lock_timeout_ms / 1000
        self.started = time.monotonic()
        self.acquired_at: float | None = None

    def acquired(self) -> None:
        self.acquired_at = time.monotonic()
        lock_metrics.record(self.strategy, "acquired", self.acquired_at - self.started)

    def __enter__(self) -> TransactionLock:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        # Whatever happened, the commit or the rollback has released the lock.
        if self.acquired_at is not None:
            lock_metrics.record(self.strategy, "released", time.monotonic() - self.acquired_at)
        elif isinstance(exc, OperationalError) and _is_lock_timeout(exc):
            lock_metrics.record(self.strategy, "timeout", time.monotonic() - self.started)
            raise LockNotAcquired(self.name, self.timeout) from exc


def _is_lock_timeout(error: OperationalError) -> bool:
    sqlstate = getattr(error.orig, "sqlstate", None)  # psycopg
    code = error.orig.args[0] if getattr(error.orig, "args", None) else None  # PyMySQL
    return (sqlstate == "55P03" or code == 1205
            or "database is locked" in str(error.orig))  # PostgreSQL, MariaDB, SQLite


# --- how another writer of a product's stock joins each strategy's exclusion ---------
# The transaction of that writer (the expiry job's restore), holding what an order holds.

@contextmanager
def row_locked(database: Engine, product_id: int, context: OrderContext) -> Iterator[Connection]:
    with locking_transaction(database, context) as db:
        db.execute(STOCK_FOR_UPDATE, {"product": product_id})
        yield db


@contextmanager
def advisory_locked(database: Engine, product_id: int,
                    context: OrderContext) -> Iterator[Connection]:
    with locking_transaction(database, context) as db:
        db.execute(ADVISORY_LOCK, {"product": product_id})
        yield db
