"""The two scheduled jobs, written as such jobs usually are: read what needs doing, then do it.

* ``expire_unpaid``: pending orders older than the expiry are marked expired,
  and their stock (or seat) is given back;
* ``send_reminders``: pending orders older than the reminder time, with no
  reminder yet, get a "please pay" message (recorded in ``reminders``, with
  the instance that sent it; nothing leaves the machine).

Each job reads its orders in one transaction, spends the business delay on
them (a payment provider to ask, a message gateway to call), then writes,
order by order. Run on two instances for the same fire time, both read the
same orders before either writes: the stock comes back twice, the customer
gets two messages. Nothing in a job stops that; its guard must
(``shop.jobs.guards``).

Last in each write's transaction a job calls ``still_ours(db)``, which raises
``LockLost`` when its guard was lost (a lease expired, a ZooKeeper session
ended, leadership moved, a later fire time took the job's row): the write is
rolled back and the job stops.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, exists, insert, select, update

from locks import LockNotAcquired
from shop.errors import StaleWriteRejected
from shop.orders.order_path import add_stock
from shop.orders.order_strategies import OrderExclusion
from shop.store.models import Order, OrderStatus, Reminder, Seat, StockRestoration

log = logging.getLogger(__name__)

#: The most orders one run handles; the next fire time takes the rest.
BATCH = 500


@dataclass(frozen=True)
class JobContext:
    instance: str
    fire_time: datetime
    #: The job's notion of now (the instance's clock, skew included).
    now: datetime
    business_delay_ms: int
    #: Raises ``LockLost`` when the job's guard is gone: call it last in every write's
    #: transaction, with that transaction (a guard kept in the database checks there).
    still_ours: Callable[[Connection], None]
    #: product id -> a context manager excluding orders while the job writes its stock
    #: (``Strategies.excluding_orders`` for the current strategy).
    exclude_orders: Callable[[int], AbstractContextManager[OrderExclusion]]
    sleep: Callable[[float], None] = time.sleep

    def pause(self) -> None:
        if self.business_delay_ms:
            self.sleep(self.business_delay_ms / 1000)


def expire_unpaid(database: Engine, context: JobContext, expiry_ms: int) -> int:
    """Expire orders unpaid for ``expiry_ms`` and restore their stock; how many it expired."""
    cutoff = context.now - timedelta(milliseconds=expiry_ms)
    with database.begin() as db:
        due = db.execute(
            select(Order.id, Order.product_id, Order.quantity, Order.seat)
            .where(Order.status == OrderStatus.PENDING.value, Order.created_at <= cutoff)
            .order_by(Order.id).limit(BATCH)).all()
    if not due:
        return 0
    context.pause()
    expired = 0
    for order in due:
        try:
            # The product's own guard too: the sale goes on meanwhile, and an
            # order's read-check-write must not overwrite the stock we give back.
            with (context.exclude_orders(order.product_id) as guard,
                  guard.transaction(database) as db):
                # Blind: the job "knows" the order is pending, it read so.
                db.execute(update(Order).where(Order.id == order.id)
                           .values(status=OrderStatus.EXPIRED.value))
                add_stock(db, order.product_id, order.quantity,
                          guard.lock.fencing_token if guard.lock else None)
                if order.seat is not None:
                    db.execute(update(Seat).where(Seat.order_id == order.id)
                               .values(order_id=None))
                db.execute(insert(StockRestoration).values(
                    order_id=order.id, product_id=order.product_id, quantity=order.quantity,
                    instance=context.instance))
                if guard.lock is not None:
                    guard.lock.ensure_held()
                context.still_ours(db)
        except (LockNotAcquired, StaleWriteRejected) as error:
            log.info("order %s: not expired this time (%s); the next run will", order.id, error)
            continue
        expired += 1
    return expired


def send_reminders(database: Engine, context: JobContext, remind_after_ms: int) -> int:
    """Remind every order pending for ``remind_after_ms`` that has had no reminder."""
    cutoff = context.now - timedelta(milliseconds=remind_after_ms)
    with database.begin() as db:
        due = db.execute(
            select(Order.id, Order.product_id)
            .where(Order.status == OrderStatus.PENDING.value, Order.created_at <= cutoff,
                   ~exists().where(Reminder.order_id == Order.id))
            .order_by(Order.id).limit(BATCH)).all()
    if not due:
        return 0
    context.pause()  # the message gateway
    for order in due:
        with database.begin() as db:
            db.execute(insert(Reminder).values(
                order_id=order.id, instance=context.instance,
                text=f"Order {order.id} is waiting for your payment."))
            context.still_ours(db)
    return len(due)


#: Every job, by the name its lock, its runs and the audit use.
JOBS: dict[str, Callable] = {
    "expire_unpaid": lambda database, context, settings: expire_unpaid(
        database, context, settings.unpaid_expiry_ms),
    "send_reminders": lambda database, context, settings: send_reminders(
        database, context, settings.reminder_after_ms),
}
