"""``SELECT ... FOR UPDATE``'s lessons (article A1), turned on a student's order step.

Two buyers run the student's step, each in a thread of the step's own process
(``remote_steps``), on the grader's own MariaDB database. The first is stopped
inside its business delay (the step's ``sleep``, which the grader hands in and the
step's process calls back: a barrier, not a clock), holding whatever its step
holds there; the second is started, and the grader waits for it to
show one of two states: waiting for a row lock (InnoDB says so, in
``information_schema.innodb_trx``) or arrived at its own business delay (it has
read, and decided, without waiting). Which one it shows is the verdict:

* C40, the same product: the second buyer must wait. Arriving at its delay, it
  has read the stock the first buyer is about to change (its lock was gone
  before its write: locked in one transaction, written in another).
* C08, another product: the second buyer must not wait. Waiting, it was locked
  out by a row it never asked for: a lookup that is not through a unique index
  makes InnoDB lock every row it scans.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy import Engine, func, select, text
from sqlalchemy.exc import OperationalError

from locks import LockNotAcquired
from lockshop.exercises import remote_locks
from lockshop.exercises.databases import LOCK_WAITS
from lockshop.exercises.grading import Background, Check, Grading
from shop.app import create_schema
from shop.errors import ShopError
from shop.i18n import _, lazy_gettext
from shop.orders.order_path import OrderContext, OrderRequest
from shop.store.db import make_engine, make_sessions
from shop.store.models import Order, Product, ProductKind
from shop.store.products import ProductSpec, reset_products

#: How long the grader waits for a buyer to show its state (reach its delay, wait for a
#: lock, or finish): far longer than a read on this machine; a hung step fails here.
SHOWS_SECONDS = 15.0
#: The business delay the steps are given; the grader's barrier replaces the sleep.
DELAY_MS = 100
#: A buyer waits this long for a row lock before the database gives up (error 1205).
LOCK_TIMEOUT_MS = 5_000
#: How often the grader asks InnoDB who waits: InnoDB refreshes what its
#: ``information_schema.innodb_trx`` shows only when it was last read 0.1 s ago or more,
#: so asking more often than that would read the same stale answer for ever.
ASK_EVERY = 0.25
#: How long B is given before InnoDB is first asked (far longer than B takes to reach a
#: row lock's wait here; the verdict waits for B up to SHOWS_SECONDS whatever this is).
FIRST_ASK = 0.05

#: How many of the grading database's transactions wait for a row lock: InnoDB's
#: ``information_schema.innodb_trx``, through the view the database was made with (the
#: grading's user has no PROCESS privilege: ``databases.LOCK_WAITS``); and, in the same
#: statement (a view cannot be dropped while a statement reads it), who made that view and
#: who reads it. The view is root's; the grading's own user, which the student's step logs
#: in as too, may drop it and make one of its own that says anything, whose definer is then
#: that user (``Shop.waiting`` believes no such view).
WAITING = text(f"SELECT (SELECT waiting FROM {LOCK_WAITS}), "
               "(SELECT DEFINER FROM information_schema.VIEWS "
               f"WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{LOCK_WAITS}'), "
               "CURRENT_USER()")


@dataclass
class Buyer:
    """One order through the student's step, in a thread of its own, stopped in its
    business delay until ``go`` is set."""

    grading: Grading
    engine: Engine
    product_id: int
    go: threading.Event
    in_delay: threading.Event = field(default_factory=threading.Event)
    job: Background | None = None

    def start(self) -> Buyer:
        context = OrderContext(instance="grader", strategy="exercise",
                               business_delay_ms=DELAY_MS, lock_timeout_ms=LOCK_TIMEOUT_MS)
        self.job = Background(self.grading.lock_class.place, self.engine,
                              OrderRequest(self.product_id), context, None, self._delay)
        return self

    def _delay(self, _seconds: float) -> None:
        self.in_delay.set()
        self.go.wait(SHOWS_SECONDS + 30)

    def outcome(self) -> tuple[bool, str]:
        """Whether it sold, and how its order ended: the order, or the shop's refusal (an
        error of the student's step is raised: the check reports it)."""
        try:
            order = self.job.result(SHOWS_SECONDS + 30)
        except ShopError as refused:
            return False, _("refused (%(error)s)", error=type(refused).__name__)
        except LockNotAcquired:  # the shop's own step says a lock wait timed out so
            return False, _("gave up waiting for a row lock (%(ms)s ms)", ms=LOCK_TIMEOUT_MS)
        except OperationalError as error:
            if not _is_lock_wait_timeout(error):
                raise
            return False, _("gave up waiting for a row lock (%(ms)s ms)", ms=LOCK_TIMEOUT_MS)
        return True, _("sold (order %(id)s)", id=order.id)

    def timed_out_waiting(self) -> bool:
        """It ended waiting for a row lock: the database gave up (error 1205)."""
        try:
            self.job.result(0)
        except LockNotAcquired:
            return True
        except OperationalError as error:
            return _is_lock_wait_timeout(error)
        except Exception:  # noqa: BLE001 - any other end: said by outcome()
            return False
        return False


def _is_lock_wait_timeout(error: OperationalError) -> bool:
    args = getattr(error.orig, "args", ())
    return bool(args) and args[0] == 1205


class Shop:
    """The shop's tables on the grader's database, and two items."""

    def __init__(self, grading: Grading, stock: tuple[int, int]) -> None:
        self.grading = grading
        self.engine = make_engine(grading.database_url)
        create_schema(self.engine)
        reset_products(make_sessions(self.engine), tuple(
            ProductSpec(f"item-{n}", f"Item {n}", ProductKind.ITEM, stock=units)
            for n, units in enumerate(stock, start=1)))

    def waiting(self) -> int:
        """How many of our database's transactions wait for a lock now (InnoDB's word);
        ``ViewReplaced`` when the view that says it is not the grader's any more. (Where the
        student's code runs as the grader's own user, on a student's own machine, both log
        in as root, and nothing is behind a boundary: the view is not asked who made it.)"""
        with self.engine.connect() as db:
            waiting, definer, reader = db.execute(WAITING).one()
        if remote_locks.STUDENT_USER is not None and definer in (None, reader):
            raise ViewReplaced(_("the grading database's view of InnoDB's lock waits is not "
                                 "the one the grader made: it was replaced by the grading's "
                                 "own user, which your step logs in as"))
        return waiting

    def sold(self, product_id: int) -> tuple[int, int]:
        """(orders, stock left) of a product."""
        with self.engine.connect() as db:
            orders = db.scalar(select(func.count()).select_from(Order)
                               .where(Order.product_id == product_id))
            stock = db.scalar(select(Product.stock).where(Product.id == product_id))
        return orders, stock

    def close(self) -> None:
        forget = getattr(self.grading.lock_class, "forget", None)  # a step in its host
        if forget is not None:
            forget(self.engine)
        self.engine.dispose()


@contextmanager
def first_buyer_in_its_delay(grading: Grading, stock: tuple[int, int]
                             ) -> Iterator[tuple[Shop, Buyer, threading.Event]]:
    """A shop, and a buyer of product 1 stopped in its business delay (what its step holds
    there, it holds); every buyer is let go at the end, and waited for."""
    shop = Shop(grading, stock)
    go = threading.Event()
    first = Buyer(grading, shop.engine, 1, go).start()
    try:
        grading.until(lambda: first.in_delay.is_set() or first.job.done(), SHOWS_SECONDS)
        if not first.in_delay.is_set():
            go.set()
            first.outcome()  # its error, if it raised: the check reports it
            raise StepNeverWaited()
        yield shop, first, go
    finally:
        go.set()
        first.job.join(SHOWS_SECONDS + 30)
        shop.close()


class ViewReplaced(Exception):
    """The view of the lock waits was made again by the grading's user: not InnoDB's word."""


class StepNeverWaited(Exception):
    """The step returned without calling its business delay: nothing can be stopped there."""


def second_buyer_shows(shop: Shop, second: Buyer) -> str:
    """What the second buyer does while the first is stopped: "waits" (for a row lock),
    "delay" (it read and decided), "done" (it finished), or "nothing"."""
    def state() -> str | None:
        if second.in_delay.is_set():
            return "delay"
        if second.job.done():
            # A wait that InnoDB's view missed still ends in the database's timeout.
            return "waits" if second.timed_out_waiting() else "done"
        return "waits" if shop.waiting() else None
    # InnoDB is first asked once B has had the time to get that far (its step runs in a
    # process of its own: a request there and a few statements), else that first answer
    # would be too early, and the next only ASK_EVERY later. B's delay or end is seen at
    # once all the same.
    shop.grading.until(lambda: second.in_delay.is_set() or second.job.done(), FIRST_ASK)
    return shop.grading.until(state, SHOWS_SECONDS, step=ASK_EVERY) or "nothing"


def _never_waited() -> tuple[str, bool]:
    return _("the first buyer's step never called its business delay: keep "
             "business_delay(context, sleep) between the check and the write, where the grader "
             "stops it"), False


# --- C40: held until the commit --------------------------------------------------------

def held_until_commit(grading: Grading) -> tuple[str, bool]:
    try:
        with first_buyer_in_its_delay(grading, stock=(1, 1)) as (shop, first, go):
            second = Buyer(grading, shop.engine, 1, go).start()
            shown = second_buyer_shows(shop, second)
            go.set()
            said = (first.outcome(), second.outcome())
            orders, left = shop.sold(1)
    except StepNeverWaited:
        return _never_waited()
    seen = {"waits": _("B waited for a row lock"),
            "delay": _("B read the stock and reached its own business delay"),
            "done": _("B finished"),
            "nothing": _("B showed nothing in %(seconds)s s", seconds=f"{SHOWS_SECONDS:g}")}
    observed = _("while A was in its business delay: %(seen)s; then A %(a)s, B %(b)s; "
                 "1 unit: %(orders)s orders, stock %(left)s",
                 seen=seen[shown], a=said[0][1], b=said[1][1], orders=orders, left=left)
    return observed, shown == "waits" and orders == 1 and left == 0


# --- C08: only the row asked for -------------------------------------------------------

def other_products_go_on(grading: Grading) -> tuple[str, bool]:
    try:
        with first_buyer_in_its_delay(grading, stock=(5, 5)) as (shop, first, go):
            second = Buyer(grading, shop.engine, 2, go).start()
            shown = second_buyer_shows(shop, second)
            go.set()
            said = (first.outcome(), second.outcome())
    except StepNeverWaited:
        return _never_waited()
    seen = {"waits": _("B, ordering product 2, waited for a row lock"),
            "delay": _("B, ordering product 2, went on to its business delay"),
            "done": _("B, ordering product 2, finished"),
            "nothing": _("B showed nothing in %(seconds)s s", seconds=f"{SHOWS_SECONDS:g}")}
    observed = _("while A held product 1 in its business delay: %(seen)s; then A %(a)s, "
                 "B %(b)s", seen=seen[shown], a=said[0][1], b=said[1][1])
    return observed, shown in ("delay", "done") and all(sold for sold, _said in said)


HELD_UNTIL_COMMIT = Check(
    "C40",
    lazy_gettext("buyer A of the last unit is stopped in its business delay; buyer B of the "
                 "same product arrives"),
    lazy_gettext("B waits for A's row lock until A's commit, then reads 0 left: one order, "
                 "stock 0"),
    lazy_gettext("The row lock is the lock only while its transaction lasts: take it with the "
                 "read that decides (SELECT stock ... FOR UPDATE), and write the stock and "
                 "insert the order in that same transaction. A commit before the write (a "
                 "transaction to lock and read, another to write) lets the next buyer read "
                 "the old stock."),
    held_until_commit)

OTHER_PRODUCTS = Check(
    "C08",
    lazy_gettext("buyer A holds product 1's row in its business delay; buyer B orders "
                 "product 2"),
    lazy_gettext("B does not wait: its FOR UPDATE locks only product 2's row"),
    lazy_gettext("InnoDB locks the index records its lookup passes: look the row up through "
                 "a unique index (WHERE id = :product, the primary key). A lookup by a column "
                 "with no unique index scans the table and locks every row it reads, so "
                 "every other product's orders wait."),
    other_products_go_on)

CHECKS = (HELD_UNTIL_COMMIT, OTHER_PRODUCTS)
