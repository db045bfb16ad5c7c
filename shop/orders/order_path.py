"""The order path: the classic read-check-write, deliberately non-atomic.

Steps, as in every article on distributed locks:

1. **read** the stock (and, for a ticket, which seats are taken);
2. **check** that the order fits;
3. wait the **business delay**, standing in for a payment check or a slow
   service call; it widens the race window so that a broken strategy fails
   every time rather than by luck;
4. **write** ``stock = <what we read> - quantity`` and
5. **insert** the order, in one transaction.

Where the lock hands out a fencing token, step 1 hands it to the product
first, and step 4 writes only if no newer token has reached the product
since (see ``fence_product`` and ``write_stock``).

Steps 1 and 4-5 are separate transactions on purpose: that is how most code
that loads an object, thinks, and saves it behaves, and it is the window a
lock must close. The lock is taken before step 1 and released only after the
write transaction has committed. Releasing it before the commit is a classic
bug: the next holder would read the stock before our write is visible.

The steps run SQLAlchemy Core statements on a connection (``with
database.begin() as db:`` is one transaction), each statement built once
below and run with its values: building a statement, or going through the
ORM's session, cost several times what the database spends running it, and
that cost hid the differences between strategies that the shop exists to show.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, bindparam, insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from locks import DistributedLock, LockError, LockFactory, LockNotAcquired
from shop.errors import (
    NotFound,
    OrderNotPending,
    SeatTaken,
    SoldOut,
    StaleWriteRejected,
    Unprocessable,
)
from shop.i18n import lazy_gettext
from shop.metrics import counters
from shop.store.models import (
    LIVE_STATUSES,
    Order,
    OrderKey,
    OrderStatus,
    PlacedOrder,
    Product,
    ProductKind,
    Seat,
    StaleWrite,
    utcnow,
)

log = logging.getLogger(__name__)

#: The most units one order may ask for.
MAX_QUANTITY = 100


@dataclass(frozen=True)
class OrderRequest:
    product_id: int
    quantity: int = 1
    seat: str | None = None
    #: The buyer's ``Idempotency-Key``: one key makes at most one order (``idempotency``).
    key: str | None = None

    @property
    def asked(self) -> str:
        """What was asked, without the key: a retry must ask the same."""
        return f"{self.product_id}/{self.quantity}/{self.seat or ''}"


@dataclass(frozen=True)
class OrderContext:
    """Who takes the order and how: the instance, the strategy, the delay."""

    instance: str
    strategy: str
    business_delay_ms: int
    lock_timeout_ms: int


def lock_name(product_id: int) -> str:
    """One lock per product: orders for different products never wait for each other."""
    return f"product:{product_id}"


def place_order(database: Engine, lock_factory: LockFactory, request: OrderRequest,
                context: OrderContext, kind: ProductKind | None = None,
                sleep: Callable[[float], None] = time.sleep) -> PlacedOrder:
    """Run the order path under a lock from ``lock_factory``; return the new order.

    ``kind`` is the product's, when the request was checked already (the shop
    checks it in the transaction that reads the settings); None checks it here.
    """
    kind = kind or check_request(database, request)
    lock = lock_factory.lock(lock_name(request.product_id), timeout=context.lock_timeout_ms / 1000)
    if not lock.acquire():
        raise LockNotAcquired(lock.name, lock.default_timeout)
    try:
        try:
            # 1. read (a short transaction of its own), our fencing token first
            with database.begin() as db:
                fence_product(db, request.product_id, lock.fencing_token)
                stock, free = read_stock(db, request.product_id, kind)
            lock.read()  # for the overlap audit: what we decide on, as of now
            # 2. check
            seat = check_fits(request, kind, stock, free)
            # 3. the business delay: the race window
            business_delay(context, sleep)
            # 4. write and 5. insert, in one transaction
            with database.begin() as db:
                write_stock(db, request.product_id, stock - request.quantity,
                            fencing_token=lock.fencing_token, handed_in=True)
                order = insert_order(db, request, seat, context)
                # Last moment to find out that the lock expired or its session
                # ended: raising here rolls the whole write back.
                lock.ensure_held()
        except StaleWriteRejected:
            record_stale_write(database, request.product_id, lock.fencing_token, context)
            raise
        lock.wrote()  # committed: the overlap audit counts holds that wrote
        return order
    finally:
        _release_quietly(lock)


# --- the steps, shared by every strategy ------------------------------------------
# Each statement is built once, here; ``:name`` values are bound when it runs.

STOCK = select(Product.stock).where(Product.id == bindparam("product"))
STOCK_FOR_UPDATE = STOCK.with_for_update()
FENCE = (update(Product).where(Product.id == bindparam("product"),
                               Product.fence < bindparam("token"))
         .values(fence=bindparam("token")))


def fence_product(db: Connection, product_id: int, fencing_token: int | None) -> None:
    """Before step 1: hand our fencing token to the product (nothing without one).

    A token refused only at the write comes too late for a read-check-write. A
    holder whose lease ran out after its last check, paused before its commit,
    has written but not committed: a new holder that reads now reads the stock
    that commit is about to change, and its own write, with the newer token,
    is accepted over it. Handed over first, our token is a write to the
    product row: it waits for that commit, and from now on every older token
    is refused, and an equal one too (a lock service that lost its count in a
    failover may hand out the same token twice).
    """
    if fencing_token is None:
        return
    if db.execute(FENCE, {"product": product_id, "token": fencing_token}).rowcount != 1:
        raise StaleWriteRejected(lazy_gettext(
            "product %(product)s: fencing token %(token)s is older than one the product "
            "has seen; the lock had moved on", product=product_id, token=fencing_token),
            token=fencing_token)


def read_stock(db: Connection, product_id: int, kind: ProductKind, *,
               for_update: bool = False) -> tuple[int | None, list[str]]:
    """Step 1: the stock and, for a ticket, the free seats. ``for_update`` locks the row."""
    stock = db.scalar(STOCK_FOR_UPDATE if for_update else STOCK, {"product": product_id})
    return stock, free_seats(db, product_id) if kind is ProductKind.TICKET else []


def check_fits(request: OrderRequest, kind: ProductKind, stock: int | None,
               free: list[str]) -> str | None:
    """Step 2: refuse what does not fit; for a ticket, return the seat to take."""
    if stock is None:
        raise NotFound(lazy_gettext("product %(product)s was removed",
                                    product=request.product_id))
    if stock < request.quantity:
        raise SoldOut(lazy_gettext(
            "product %(product)s is sold out (%(left)s left, %(asked)s asked)",
            product=request.product_id, left=stock, asked=request.quantity), remaining=stock)
    return _choose_seat(request, free) if kind is ProductKind.TICKET else None


def business_delay(context: OrderContext, sleep: Callable[[float], None] = time.sleep) -> None:
    """Step 3: the time a real shop spends between check and write."""
    if context.business_delay_ms:
        sleep(context.business_delay_ms / 1000)


WRITE_STOCK = (update(Product).where(Product.id == bindparam("product"))
               .values(stock=bindparam("new_stock")))
WRITE_STOCK_FENCED = (update(Product)
                      .where(Product.id == bindparam("product"),
                             Product.fence < bindparam("token"))
                      .values(stock=bindparam("new_stock"), fence=bindparam("token")))
WRITE_STOCK_STILL_FENCED = (update(Product)
                            .where(Product.id == bindparam("product"),
                                   Product.fence == bindparam("token"))
                            .values(stock=bindparam("new_stock")))


def write_stock(db: Connection, product_id: int, new_stock: int,
                fencing_token: int | None = None, *, handed_in: bool = False) -> None:
    """Step 4: the blind write of an absolute value, as load-modify-save code does.

    With a fencing token, the write lands only if the token is newer than any
    the product has seen; ``handed_in`` (``fence_product`` before the read),
    only if ours is still the newest. The check and the write are one UPDATE,
    so a holder whose lease ran out while it paused cannot slip in between.
    """
    if fencing_token is None:
        db.execute(WRITE_STOCK, {"product": product_id, "new_stock": new_stock})
        return
    written = db.execute(WRITE_STOCK_STILL_FENCED if handed_in else WRITE_STOCK_FENCED,
                         {"product": product_id, "new_stock": new_stock,
                          "token": fencing_token})
    if written.rowcount != 1:
        raise StaleWriteRejected(lazy_gettext(
            "product %(product)s: fencing token %(token)s is older than one the product "
            "has seen; the lock had moved on, nothing was written",
            product=product_id, token=fencing_token), token=fencing_token)


def add_stock(db: Connection, product_id: int, quantity: int,
              fencing_token: int | None = None) -> None:
    """Give ``quantity`` back to the stock, for a writer outside the order path.

    An increment rather than a blind write, and it bumps the version, so that
    an optimistic order that read before it fails its compare-and-set. It must
    still run under the strategy's guard (``Strategies.excluding_orders``): a
    locked order's read-check-write would otherwise overwrite it. With a
    fencing token, as ``write_stock`` without ``handed_in``.
    """
    query = update(Product).where(Product.id == product_id)
    values = {"stock": Product.stock + quantity, "version": Product.version + 1}
    if fencing_token is not None:
        query = query.where(Product.fence < fencing_token)
        values["fence"] = fencing_token
    if db.execute(query.values(**values)).rowcount != 1:
        raise StaleWriteRejected(lazy_gettext(
            "product %(product)s: fencing token %(token)s is older than one the product "
            "has seen", product=product_id, token=fencing_token), token=fencing_token)


def record_stale_write(database: Engine, product_id: int, token: int | None,
                       context: OrderContext) -> None:
    """Keep a refused write for the audit (its own transaction: the order's was rolled back)."""
    counters.add("stale_writes", strategy=context.strategy)
    with database.begin() as db:
        db.execute(insert(StaleWrite).values(product_id=product_id, token=token or 0,
                                             instance=context.instance, strategy=context.strategy))


NEW_ORDER = insert(Order)
NEW_KEY = insert(OrderKey).values(key=bindparam("key"), order_id=bindparam("order"),
                                  request=bindparam("asked"), created_at=bindparam("at"))
CLAIM_SEAT = (update(Seat).where(Seat.product_id == bindparam("product"),
                                 Seat.label == bindparam("seat"))
              .values(order_id=bindparam("order")))


def insert_order(db: Connection, request: OrderRequest, seat: str | None,
                 context: OrderContext, attempts: int = 1) -> PlacedOrder:
    """Step 5: the order row (and, for a ticket, a blind claim of its seat).

    With the buyer's idempotency key, the key's row too: if a retry's order took
    the key first, this insert fails and the whole write rolls back."""
    values = {"product_id": request.product_id, "quantity": request.quantity, "seat": seat,
              "status": OrderStatus.PENDING.value, "instance": context.instance,
              "strategy": context.strategy, "attempts": attempts, "created_at": utcnow()}
    order_id = db.execute(NEW_ORDER, values).inserted_primary_key[0]
    if seat is not None:
        db.execute(CLAIM_SEAT, {"product": request.product_id, "seat": seat, "order": order_id})
    if request.key is not None:
        db.execute(NEW_KEY, {"key": request.key, "order": order_id, "asked": request.asked,
                             "at": values["created_at"]})
    return PlacedOrder(id=order_id, **values)


def pay_order(sessions: sessionmaker[Session], order_id: int) -> Order:
    """Mark a pending order paid; 404 if unknown, 409 if it is not pending."""
    with sessions.begin() as session:
        # One conditional UPDATE: two payments of one order cannot both succeed.
        paid = session.execute(
            update(Order).where(Order.id == order_id, Order.status == OrderStatus.PENDING.value)
            .values(status=OrderStatus.PAID.value, paid_at=utcnow()))
        order = session.get(Order, order_id)
        if order is None:
            raise NotFound(lazy_gettext("order %(order)s not found", order=order_id))
        if paid.rowcount == 0:
            raise OrderNotPending(lazy_gettext("order %(order)s is %(status)s, not pending",
                                               order=order_id, status=order.status),
                                  status=order.status)
        return order


def get_order(sessions: sessionmaker[Session], order_id: int) -> Order:
    with sessions.begin() as session:
        order = session.get(Order, order_id)
        if order is None:
            raise NotFound(lazy_gettext("order %(order)s not found", order=order_id))
        return order


# --- helpers ----------------------------------------------------------------

KIND = select(Product.kind).where(Product.id == bindparam("product"))
SEAT_ID = select(Seat.id).where(Seat.product_id == bindparam("product"),
                                Seat.label == bindparam("seat"))


def check_request(database: Engine | Connection, request: OrderRequest) -> ProductKind:
    """Refuse what can be refused before taking a lock (unknown product, wrong kind).

    On an engine, in a transaction of its own; on a connection, in its transaction.
    """
    if not 1 <= request.quantity <= MAX_QUANTITY:
        raise Unprocessable(lazy_gettext("'quantity' must be between 1 and %(max)s, got %(got)s",
                                         max=MAX_QUANTITY, got=request.quantity))
    if isinstance(database, Engine):
        with database.begin() as db:
            return check_request(db, request)
    db = database
    kind = db.scalar(KIND, {"product": request.product_id})
    if kind is None:
        raise NotFound(lazy_gettext("product %(product)s not found",
                                    product=request.product_id))
    if kind == ProductKind.ITEM.value:
        if request.seat is not None:
            raise Unprocessable(lazy_gettext("product %(product)s is an item: it has no seats",
                                             product=request.product_id))
        return ProductKind.ITEM
    if request.quantity != 1:
        raise Unprocessable(lazy_gettext("a ticket order is for exactly one seat (quantity 1)"))
    if request.seat is not None and db.scalar(
            SEAT_ID, {"product": request.product_id, "seat": request.seat}) is None:
        raise Unprocessable(lazy_gettext("product %(product)s has no seat %(seat)r",
                                         product=request.product_id, seat=request.seat))
    return ProductKind.TICKET


TAKEN_SEATS = select(Order.seat).where(Order.product_id == bindparam("product"),
                                       Order.status.in_(LIVE_STATUSES),
                                       Order.seat.is_not(None))
SEAT_LABELS = (select(Seat.label).where(Seat.product_id == bindparam("product"))
               .order_by(Seat.id))


def free_seats(db: Connection, product_id: int) -> list[str]:
    """Seat labels in seat-map order, less those held by a live order."""
    taken = set(db.scalars(TAKEN_SEATS, {"product": product_id}))
    return [label for label in db.scalars(SEAT_LABELS, {"product": product_id})
            if label not in taken]


def _choose_seat(request: OrderRequest, free: list[str]) -> str:
    """The named seat if it is free; otherwise the first free one."""
    if request.seat is None:
        if not free:
            raise SoldOut(lazy_gettext("product %(product)s has no free seat",
                                       product=request.product_id), remaining=0)
        return free[0]
    if request.seat not in free:
        raise SeatTaken(lazy_gettext("seat %(seat)s is taken", seat=request.seat),
                        seat=request.seat)
    return request.seat


def _release_quietly(lock: DistributedLock) -> None:
    # A failed release must not hide the order's own outcome (committed or
    # not, it is decided by now); the lock's metrics count it and we log it.
    try:
        lock.release()
    except LockError as error:
        log.warning("releasing %s after the order failed: %s", lock.name, error)
