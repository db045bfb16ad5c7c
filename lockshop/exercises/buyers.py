"""Buyers of the grader's own, calling a student's order step as the shop would.

An order step (``shop.orders.custom_steps.OrderStep``) places an order with
``place(database, request, context, kind=None, sleep=time.sleep)``, as the
shop's transaction strategies do (``shop.orders.transactions``). The grader
calls it from threads, each a buyer, on a fresh SQLite shop database of one
check's own, and judges what happened by the shop's audit of that database,
never by what the step answered alone. The step itself runs in a process of its
own (``remote_steps``: each buyer's call in a thread there, on the same file,
which the student's user may write), never in the grader's.

The race is forced from outside, through the step's own business delay: the
``sleep`` the grader hands in holds each buyer's FIRST delay until every buyer
has reached it (``Together``), so every buyer has read before any of them
writes. Later calls (a retry's delay, a backoff) sleep as asked. With the step
in its host, each delay is a call back to this ``sleep``, in the buyer's own
thread here, and the step goes on when it returns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select

from lockshop.exercises import databases, remote_locks
from lockshop.exercises.grading import CHECK_SECONDS, Background, Grading
from shop.app import create_schema
from shop.errors import ShopError
from shop.i18n import _
from shop.orders.custom_steps import OrderStep
from shop.orders.order_path import OrderContext, OrderRequest
from shop.store.audit import ProductAudit, take_audit
from shop.store.db import make_engine, make_sessions
from shop.store.models import Product, ProductKind
from shop.store.products import ProductSpec, reset_products, seat_labels

#: How long a buyer's first business delay waits for the others before going on alone.
TOGETHER_SECONDS = 10.0


class Together:
    """A ``sleep`` for the business delay that holds each buyer's first call until all
    ``buyers`` have made theirs: they have all read before any of them writes."""

    def __init__(self, buyers: int) -> None:
        self._barrier = threading.Barrier(buyers)
        self._seen: set[int] = set()
        self._lock = threading.Lock()
        #: False when some buyer never reached its delay (a step without one, or one that
        #: failed before it): the others went on alone after ``TOGETHER_SECONDS``.
        self.met = True

    def __call__(self, seconds: float) -> None:
        me = threading.get_ident()
        with self._lock:
            first = me not in self._seen
            self._seen.add(me)
        if not first:
            time.sleep(seconds)
            return
        try:
            self._barrier.wait(TOGETHER_SECONDS)
        except threading.BrokenBarrierError:
            self.met = False


@dataclass
class Outcome:
    """What one buyer's call of the step came to."""

    order_id: int | None = None
    refused: str | None = None  # the shop's error code: "sold_out", "seat_taken", ...
    error: BaseException | None = None  # anything else the step raised

    def said(self) -> str:
        if self.order_id is not None:
            return _("order %(id)s", id=self.order_id)
        if self.refused is not None:
            return self.refused
        # The first line: a database's error goes on with its SQL and parameters.
        return f"{type(self.error).__name__}: {str(self.error).splitlines()[0]}"


@dataclass
class Floor:
    """One check's shop database, and the student's step selling from it."""

    grading: Grading
    products: tuple[ProductSpec, ...]
    delay_ms: int = 50

    def __post_init__(self) -> None:
        self.path = _fresh_database(self.grading)
        self.engine = make_engine(f"sqlite:///{self.path}")
        create_schema(self.engine)
        self.sessions = make_sessions(self.engine)
        reset_products(self.sessions, self.products)

    @property
    def step(self) -> OrderStep:
        # Grading keeps the student's code under one name, a lock class or a step.
        return self.grading.lock_class

    def context(self) -> OrderContext:
        return OrderContext("grader", "exercise", business_delay_ms=self.delay_ms,
                            lock_timeout_ms=30_000)

    def buy(self, request: OrderRequest, sleep: Callable[[float], None] = time.sleep
            ) -> Outcome:
        """One call of the student's step; what it came to."""
        try:
            order = self.step.place(self.engine, request, self.context(), sleep=sleep)
        except ShopError as refusal:
            return Outcome(refused=refusal.code)
        except NotImplementedError:
            raise  # a TODO left: the grader says so in the skeleton's own words
        except Exception as error:  # noqa: BLE001 - the student's code may raise anything
            return Outcome(error=error)
        return Outcome(order_id=getattr(order, "id", None))

    def together(self, requests: list[OrderRequest]) -> tuple[list[Outcome], bool]:
        """``requests`` bought at once, each by a buyer of its own, every buyer past its
        read before any writes; the outcomes, and whether they all met in the delay."""
        meeting = Together(len(requests))
        buyers = [Background(self.buy, request, meeting) for request in requests]
        outcomes = [buyer.result(CHECK_SECONDS) for buyer in buyers]
        return outcomes, meeting.met

    def audit(self, product: int = 1) -> ProductAudit:
        return take_audit(self.sessions).products[product - 1]

    def version(self, product: int = 1) -> int:
        """The product's version column: how many writes of the optimistic kind landed."""
        with self.engine.connect() as db:
            return int(db.scalar(select(Product.version).where(Product.id == product)))

    def close(self) -> None:
        forget = getattr(self.step, "forget", None)  # a step in its host: its engine too
        if forget is not None:
            forget(self.engine)
        self.engine.dispose()

    def __enter__(self) -> Floor:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def item(stock: int) -> ProductSpec:
    return ProductSpec("item", "Grader's item", ProductKind.ITEM, stock=stock)


def ticket(seats: int) -> ProductSpec:
    return ProductSpec("ticket", "Grader's ticket", ProductKind.TICKET, seats=seat_labels(seats))


_counter = iter(range(1, 1_000_000))


def _fresh_database(grading: Grading) -> Path:
    """A new SQLite file for one check: one the student's user can write too when the step
    runs as that user, in its host (``databases.students_file``)."""
    name = f"check-{next(_counter)}.db"
    if grading.host is not None and remote_locks.STUDENT_USER is not None:
        return databases.students_file(grading.runtime, "orders", name)
    folder = grading.runtime / "orders"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name
