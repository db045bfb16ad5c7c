"""An order step from a file, plugged in as a strategy: a student's SQL, or anyone's.

A lock strategy runs the shop's own read-check-write inside someone's lock
(``locks.custom``); an order step is the read-check-write itself, written
against the database (a row lock, a version column, a conditional UPDATE), as
the transaction strategies of ``shop.orders.transactions`` are.

``load_order_step("for_update_step.py:ForUpdateStep")`` imports the file and
hands back the step: an ``OrderStep`` subclass (made once), or a function with
the signature of ``place_for_update`` (``shop.orders.transactions:place_atomic``
works as it is). With no name after the colon, the file must define exactly one
``OrderStep`` subclass. ``register_step("mine", step)`` adds it to the shop's
strategies; ``Config.extra_steps`` (``LOCKSHOP_EXTRA_STEPS``, ``name=FILE[:Name]``
each) does both when an instance starts.

A file that gives no step is one ``OrderStepError`` (a ``LockClassError``, so
that whoever reports a student's broken lock file reports this one the same
way) naming the file and, where there is one, the line.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from sqlalchemy import Connection, Engine

from locks.custom import LockClassError, load_module, split_spec
from shop.orders.order_path import OrderContext, OrderRequest
from shop.store.models import PlacedOrder, ProductKind

Sleep = Callable[[float], None]


class OrderStepError(LockClassError):
    """The file or module named cannot give an order step; the message says where."""


class OrderStep:
    """The order path written against the database: read, check, wait, write, insert.

    ``place`` is called for every order, in whichever thread serves it; a step keeps
    no state of its own between orders (several threads run it at once).
    """

    #: Which of the strategies' families it belongs to ("database", "lock-free").
    family = "database"
    #: Databases it needs ("mysql", "postgresql", "sqlite"); empty: any.
    requires: tuple[str, ...] = ()

    def place(self, database: Engine, request: OrderRequest, context: OrderContext,
              kind: ProductKind | None = None, sleep: Sleep = time.sleep) -> PlacedOrder:
        raise NotImplementedError

    def exclude_orders(self, database: Engine, product_id: int,
                       context: OrderContext) -> AbstractContextManager[Connection]:
        """The transaction in which another writer of the product's stock (the expiry
        job) keeps this step's orders out. A plain transaction unless the step says
        otherwise: right for a step that checks its write (a version, a condition)."""
        return database.begin()


@dataclass(frozen=True)
class FunctionStep(OrderStep):
    """A function with ``place``'s signature, as a step."""

    function: Callable[..., PlacedOrder]

    def place(self, database, request, context, kind=None, sleep=time.sleep) -> PlacedOrder:
        return self.function(database, request, context, kind, sleep)


def load_order_step(spec: str) -> OrderStep:
    """The order step ``spec`` (``FILE[:Name]`` or ``package.module:Name``) names."""
    target, name = split_spec(spec)
    try:
        module = load_module(target)
    except LockClassError as error:
        raise OrderStepError(str(error)) from None
    where = getattr(module, "__file__", None) or target
    found = {key: value for key, value in vars(module).items()
             if inspect.isclass(value) and issubclass(value, OrderStep)
             and value.__module__ == module.__name__}
    if name is None:
        if len(found) != 1:
            said = f"has {len(found)} order steps ({', '.join(found)}): name one" if found \
                else "has no order step (a subclass of OrderStep)"
            raise OrderStepError(f"{where}: {said}")
        return _made(next(iter(found.values())), where)
    value = getattr(module, name, None)
    if value is None:
        raise OrderStepError(f"{where}: has no {name}"
                             + (f" (its order steps: {', '.join(found)})" if found else ""))
    if inspect.isclass(value) and issubclass(value, OrderStep):
        return _made(value, where)
    if inspect.isfunction(value):
        return FunctionStep(value)
    raise OrderStepError(f"{where}: {name} is neither an order step (a subclass of "
                         "OrderStep) nor a function")


def _made(step_class: type[OrderStep], where: str) -> OrderStep:
    try:
        return step_class()
    except Exception as error:  # noqa: BLE001 - any failure of the student's constructor
        raise OrderStepError(f"{where}: {step_class.__name__}() failed: "
                             f"{type(error).__name__}: {error}") from None


def register_step(name: str, step: OrderStep, *, source: str = "") -> None:
    """Add ``step`` as the strategy ``name`` (again, if the same source asks twice)."""
    from shop.orders.order_strategies import ShopStrategy, plug_in
    plug_in(ShopStrategy(name=name, family=step.family,
                         summary=f"Your order step: {source or type(step).__name__}.",
                         correct_across_instances=True, requires=step.requires,
                         runner=step.place, exclude_orders=step.exclude_orders))


def register_step_spec(named_spec: str) -> None:
    """``name=FILE[:Name]`` (as ``LOCKSHOP_EXTRA_STEPS`` holds it) as a strategy."""
    name, equals, spec = named_spec.partition("=")
    if not equals or not name.isidentifier():
        raise OrderStepError(f"{named_spec!r}: expected name=FILE[:Name]")
    register_step(name, load_order_step(spec), source=spec)
