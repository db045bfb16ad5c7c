"""Order steps the lock-free exercises (19 to 21) must catch: each is right but for one
thing, and the grader must name that thing's lesson. Each has the shape of the shop's
transaction strategies: ``(database, request, context, kind=None, sleep=time.sleep)``."""

from __future__ import annotations

import time
from dataclasses import replace

from sqlalchemy import text

from shop.errors import SoldOut
from shop.orders.order_path import (
    business_delay,
    check_fits,
    check_request,
    free_seats,
    insert_order,
    read_stock,
    write_stock,
)
from shop.orders.transactions import TAKE_STOCK, TooMuchContention, place_atomic
from shop.store.models import ProductKind

VERSION_AND_STOCK = text("SELECT version, stock FROM products WHERE id = :product")
WRITE_IF_UNCHANGED = text("UPDATE products SET stock = :new_stock, version = :version + 1 "
                          "WHERE id = :product AND version = :version")


def read_check_write(database, request, context, kind=None, sleep=time.sleep):
    """The ``none`` strategy's path: read, check, wait, write a blind absolute stock (C07, C25)."""
    kind = kind or check_request(database, request)
    with database.begin() as db:
        stock, free = read_stock(db, request.product_id, kind)
    seat = check_fits(request, kind, stock, free)
    business_delay(context, sleep)
    with database.begin() as db:
        write_stock(db, request.product_id, stock - request.quantity)
        return insert_order(db, request, seat, context)


def _optimistic(database, request, context, kind, sleep, *, on_conflict):
    kind = kind or check_request(database, request)
    for attempt in range(1, 21):
        with database.begin() as db:
            version, stock = db.execute(VERSION_AND_STOCK,
                                        {"product": request.product_id}).one()
            free = free_seats(db, request.product_id) if kind is ProductKind.TICKET else []
        seat = check_fits(request, kind, stock, free)
        business_delay(context, sleep)
        with database.begin() as db:
            written = db.execute(WRITE_IF_UNCHANGED, {"product": request.product_id,
                                                      "version": version,
                                                      "new_stock": stock - request.quantity})
            if on_conflict(db, written.rowcount, request, stock):
                return insert_order(db, request, seat, context, attempts=attempt)
        sleep(0.002 * attempt)
    raise TooMuchContention("all conflicted")


def version_unchecked(database, request, context, kind=None, sleep=time.sleep):
    """The version in the WHERE, but the UPDATE's row count never looked at: the loser of
    the race sells anyway (C07)."""
    return _optimistic(database, request, context, kind, sleep,
                       on_conflict=lambda db, rowcount, request, stock: True)


def conflict_refused(database, request, context, kind=None, sleep=time.sleep):
    """A conflict answered as a failure, not retried: stock left unsold (C07)."""
    def refuse(db, rowcount, request, stock):
        if rowcount != 1:
            raise TooMuchContention("someone else wrote first")
        return True
    return _optimistic(database, request, context, kind, sleep, on_conflict=refuse)


def stale_retry(database, request, context, kind=None, sleep=time.sleep):
    """After a conflict it reads the version again, but not the stock: it writes the stock
    of its first read with a fresh version (C07, a lost update)."""
    def retry_write(db, rowcount, request, stock):
        if rowcount == 1:
            return True
        version = db.scalar(text("SELECT version FROM products WHERE id = :product"),
                            {"product": request.product_id})
        return db.execute(WRITE_IF_UNCHANGED, {"product": request.product_id,
                                               "version": version,
                                               "new_stock": stock - request.quantity}
                          ).rowcount == 1
    return _optimistic(database, request, context, kind, sleep, on_conflict=retry_write)


def version_not_bumped(database, request, context, kind=None, sleep=time.sleep):
    """The version compared but never bumped: every writer still finds the version it read,
    so the second write lands on the first (C07, a lost update)."""
    kind = kind or check_request(database, request)
    with database.begin() as db:
        version, stock = db.execute(VERSION_AND_STOCK, {"product": request.product_id}).one()
        free = free_seats(db, request.product_id) if kind is ProductKind.TICKET else []
    seat = check_fits(request, kind, stock, free)
    business_delay(context, sleep)
    with database.begin() as db:
        written = db.execute(text("UPDATE products SET stock = :new_stock WHERE id = :product "
                                  "AND version = :version"),
                             {"product": request.product_id, "version": version,
                              "new_stock": stock - request.quantity})
        if written.rowcount != 1:
            raise TooMuchContention("someone else wrote first")
        return insert_order(db, request, seat, context)


def unconditional_update(database, request, context, kind=None, sleep=time.sleep):
    """``stock = stock - q`` with no ``stock >= q`` in its WHERE: it never refuses (C25)."""
    kind = kind or check_request(database, request)
    business_delay(context, sleep)
    with database.begin() as db:
        db.execute(text("UPDATE products SET stock = stock - :quantity WHERE id = :product"),
                   {"product": request.product_id, "quantity": request.quantity})
        return insert_order(db, request, None, context)


def blind_seat_claim(database, request, context, kind=None, sleep=time.sleep):
    """The stock taken by a conditional UPDATE, but the named seat claimed whatever holds it
    (no ``order_id IS NULL``): every buyer of one seat gets it (C25)."""
    kind = kind or check_request(database, request)
    business_delay(context, sleep)
    with database.begin() as db:
        if db.execute(TAKE_STOCK, {"product": request.product_id,
                                   "quantity": request.quantity}).rowcount != 1:
            raise SoldOut("sold out")
        order = insert_order(db, request, None, context)
        if kind is ProductKind.TICKET:
            seat = request.seat or "A1"
            db.execute(text("UPDATE seats SET order_id = :order WHERE product_id = :product "
                            "AND label = :seat"),
                       {"order": order.id, "product": request.product_id, "seat": seat})
            db.execute(text("UPDATE orders SET seat = :seat WHERE id = :order"),
                       {"seat": seat, "order": order.id})
            order.seat = seat
        return order


def without_key(database, request, context, kind=None, sleep=time.sleep):
    """The conditional UPDATE, with the order's key dropped: every retry buys again (C44)."""
    return place_atomic(database, replace(request, key=None), context, kind, sleep)


# --- exercise 21: the key -------------------------------------------------------------------

def _keyed_order(database, key):
    from sqlalchemy import select

    from shop.store.models import Order, OrderKey, PlacedOrder
    with database.begin() as db:
        order_id = db.scalar(select(OrderKey.order_id).where(OrderKey.key == key))
        if order_id is None:
            return None
        row = db.execute(select(Order.__table__).where(Order.id == order_id)).one()
        return PlacedOrder(**row._asdict())


def _remember(db, request, order_id):
    from sqlalchemy import insert

    from shop.store.models import OrderKey, utcnow
    db.execute(insert(OrderKey).values(key=request.key, order_id=order_id,
                                       request=request.asked, created_at=utcnow()))


def _keyed(database, request, context, kind, sleep, *, key_apart, answer_the_winner):
    from sqlalchemy.exc import IntegrityError
    kind = kind or check_request(database, request)
    first = _keyed_order(database, request.key)
    if first is not None:
        return first
    business_delay(context, sleep)
    try:
        with database.begin() as db:
            if db.execute(TAKE_STOCK, {"product": request.product_id,
                                       "quantity": request.quantity}).rowcount != 1:
                raise SoldOut("sold out")
            order = insert_order(db, replace(request, key=None), None, context)
            if not key_apart:
                _remember(db, request, order.id)
        if key_apart:  # committed already: the key comes a transaction too late
            with database.begin() as db:
                _remember(db, request, order.id)
        return order
    except IntegrityError:
        first = _keyed_order(database, request.key) if answer_the_winner else None
        if first is None:
            raise
        return first


def key_after_commit(database, request, context, kind=None, sleep=time.sleep):
    """The key looked up, but written in a transaction after the order's: two attempts at
    once both commit an order (C44)."""
    return _keyed(database, request, context, kind, sleep, key_apart=True,
                  answer_the_winner=True)


def raises_on_conflict(database, request, context, kind=None, sleep=time.sleep):
    """The key in the order's transaction, but the attempt whose key insert fails answers
    with the error, not with the order that won (C44)."""
    return _keyed(database, request, context, kind, sleep, key_apart=False,
                  answer_the_winner=False)


def no_lookup(database, request, context, kind=None, sleep=time.sleep):
    """The key in the order's transaction, never looked up first: a retry of the last unit's
    order answers 'sold out' although its order was taken (C44)."""
    from sqlalchemy.exc import IntegrityError
    kind = kind or check_request(database, request)
    business_delay(context, sleep)
    try:
        with database.begin() as db:
            if db.execute(TAKE_STOCK, {"product": request.product_id,
                                       "quantity": request.quantity}).rowcount != 1:
                raise SoldOut("sold out")
            order = insert_order(db, replace(request, key=None), None, context)
            _remember(db, request, order.id)
            return order
    except IntegrityError:
        first = _keyed_order(database, request.key)
        if first is None:
            raise
        return first
