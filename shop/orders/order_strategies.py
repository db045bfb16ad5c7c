"""The strategies: every way the order path can be guarded.

Two kinds, one list:

* **lock strategies**, from ``locks``: the read-check-write of
  ``shop.orders.order_path.place_order`` runs inside a lock named per product. Each
  lock factory is opened once per process and kept: ``local``'s locks only
  exclude each other because every request of this process shares them;
* **transaction strategies**, from ``shop.orders.transactions``: the database
  itself guards or replaces the read-check-write, inside one transaction
  (a row lock, an advisory lock, a version check, a conditional UPDATE).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from sqlalchemy import Connection, Engine

import locks
from locks import (
    Backends,
    DistributedLock,
    LockError,
    LockFactory,
    LockNotAcquired,
    UnknownStrategy,
)
from shop.errors import Unprocessable
from shop.i18n import N_, _, lazy_gettext
from shop.orders.order_path import OrderContext, OrderRequest, lock_name, place_order
from shop.orders.transactions import (
    advisory_locked,
    place_atomic,
    place_for_update,
    place_optimistic,
    place_pg_advisory,
    row_locked,
)
from shop.store.models import PlacedOrder, ProductKind

log = logging.getLogger(__name__)

#: (database, request, context, the product's kind if the request was checked) -> order
OrderRunner = Callable[[Engine, OrderRequest, OrderContext, ProductKind | None], PlacedOrder]
#: (database, product id, context) -> a transaction that excludes the product's orders
Exclusion = Callable[[Engine, int, OrderContext], AbstractContextManager[Connection]]

DATABASES = ("sqlite", "postgresql", "mysql")


@dataclass(frozen=True)
class ShopStrategy:
    name: str
    family: str
    summary: str
    correct_across_instances: bool
    failure_mode: str = ""
    #: Backends it needs: "redis", "zookeeper", or a database ("postgresql", ...).
    requires: tuple[str, ...] = ()
    correct_within_one_process: bool | None = None
    #: For transaction strategies: the function that places an order.
    runner: OrderRunner | None = None
    #: For transaction strategies: the transaction in which another writer of a
    #: product's stock (the expiry job) excludes orders. None: an atomic increment
    #: that also bumps the version is enough (optimistic, atomic).
    exclude_orders: Exclusion | None = None

    def expected_correct(self, instances: int) -> bool:
        if instances == 1 and self.correct_within_one_process is not None:
            return self.correct_within_one_process
        return self.correct_across_instances

    @classmethod
    def from_lock(cls, strategy: locks.Strategy) -> ShopStrategy:
        return cls(strategy.name, strategy.family, strategy.summary,
                   strategy.correct_across_instances, strategy.failure_mode, strategy.requires,
                   strategy.correct_within_one_process)


#: The database's own tools, listed after the locks: each replaces the read-check-write
#: with one transaction (``shop.orders.transactions``).
TRANSACTION_STRATEGIES = (
    ShopStrategy(
        name="for_update", family="database",
        summary=N_("SELECT ... FOR UPDATE on the product row, held to commit "
                "(BEGIN IMMEDIATE on SQLite)."),
        correct_across_instances=True, runner=place_for_update,
        exclude_orders=row_locked),
    ShopStrategy(
        name="pg_advisory", family="database",
        summary=N_("pg_advisory_xact_lock per product, released by the commit."),
        correct_across_instances=True, requires=("postgresql",), runner=place_pg_advisory,
        exclude_orders=advisory_locked),
    ShopStrategy(
        name="optimistic", family="lock-free",
        summary=N_("Version column and compare-and-set, retried on conflict (bounded)."),
        correct_across_instances=True, runner=place_optimistic),
    ShopStrategy(
        name="atomic", family="lock-free",
        summary=N_("One conditional UPDATE: stock = stock - q WHERE stock >= q "
                "(a seat: WHERE order_id IS NULL)."),
        correct_across_instances=True, runner=place_atomic),
)


#: Order steps plugged in from files (``shop.orders.custom_steps``), in the order given.
_PLUGGED_IN: dict[str, ShopStrategy] = {}


def all_strategies() -> list[ShopStrategy]:
    """Every strategy, in teaching order: locks first, then the database's own tools, then
    the order steps plugged in from files."""
    return ([ShopStrategy.from_lock(s) for s in locks.all_strategies()]
            + list(TRANSACTION_STRATEGIES) + list(_PLUGGED_IN.values()))


def plug_in(strategy: ShopStrategy) -> None:
    """Add an order step's strategy (``custom_steps.register_step``); the same one twice is
    no change, another under a name already taken is refused."""
    known = {s.name: s for s in all_strategies()}.get(strategy.name)
    if known is not None and known.summary != strategy.summary:
        raise ValueError(f"strategy {strategy.name!r} is already registered")
    if known is None:
        _PLUGGED_IN[strategy.name] = strategy


@dataclass(frozen=True)
class OrderExclusion:
    """What a writer outside the order path holds while it changes a product's stock."""

    #: ``transaction(database)``: the write's transaction, excluding orders where the
    #: strategy's guard is the transaction itself (a row lock, an advisory lock).
    transaction: Callable[[Engine], AbstractContextManager[Connection]]
    #: The product's lock, for a lock strategy: its fencing token, and ensure_held().
    lock: DistributedLock | None = None


class Strategies:
    """This process's strategies: what runs here, and how."""

    def __init__(self, backends: Backends, database: str) -> None:
        self.backends = backends
        self.database = database  # "sqlite", "postgresql" or "mysql"
        self._by_name = {s.name: s for s in all_strategies()}
        self._factories: dict[str, LockFactory] = {}
        self._opening = threading.Lock()

    def names(self) -> list[str]:
        return list(self._by_name)

    def get(self, name: str) -> ShopStrategy:
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownStrategy(name, self.names()) from None

    def refuse_unusable(self, name: str) -> None:
        """``Unprocessable`` when the strategy needs a database other than ours."""
        needed = [r for r in self.get(name).requires if r in DATABASES]
        if needed and self.database not in needed:
            raise Unprocessable(lazy_gettext(
                "strategy %(name)r needs %(needed)s; this shop runs on %(database)s",
                name=name, needed=" or ".join(needed), database=self.database),
                requires=needed)

    def runner(self, name: str) -> OrderRunner:
        """How to place an order under ``name``."""
        strategy = self.get(name)
        if strategy.runner is not None:
            self.refuse_unusable(name)
            return strategy.runner
        factory = self._factory(name)
        return lambda database, request, context, kind=None: place_order(
            database, factory, request, context, kind)

    def lock_factory(self, name: str) -> LockFactory | None:
        """The lock factory of a lock strategy; None for a transaction strategy."""
        if self.get(name).runner is not None:
            return None
        return self._factory(name)

    @contextmanager
    def excluding_orders(self, name: str, product_id: int,
                       context: OrderContext) -> Iterator[OrderExclusion]:
        """Exclude ``name``'s orders from ``product_id`` while another writer changes its
        stock: the product's lock for a lock strategy, the transaction's own guard for a
        transaction strategy. Whoever writes stock outside the order path must use it,
        or an order's read-check-write overwrites its change (a lost update)."""
        strategy = self.get(name)
        if strategy.runner is not None:
            exclude = strategy.exclude_orders
            yield OrderExclusion(lambda database: exclude(database, product_id, context)
                                 if exclude else database.begin())
            return
        lock = self._factory(name).lock(lock_name(product_id),
                                        timeout=context.lock_timeout_ms / 1000)
        if not lock.acquire():
            raise LockNotAcquired(lock.name, lock.default_timeout)
        try:
            yield OrderExclusion(lambda database: database.begin(), lock)
        finally:
            try:
                lock.release()
            except LockError as error:
                log.warning("release after a stock write failed: %s", error)

    def available(self, name: str) -> bool:
        """Whether ``name`` can run here now: its database, library and server are there."""
        return self._available(self.get(name))

    def describe(self) -> list[dict]:
        """Every strategy, as ``GET /api/strategies`` lists it."""
        return [{"name": s.name, "family": s.family, "summary": _(s.summary),
                 "correct_across_instances": s.correct_across_instances,
                 "failure_mode": s.failure_mode, "requires": list(s.requires),
                 "available": self._available(s)} for s in self._by_name.values()]

    def _factory(self, name: str) -> LockFactory:
        with self._opening:
            if name not in self._factories:
                self._factories[name] = locks.get(name).open(self.backends)
            return self._factories[name]

    def _available(self, strategy: ShopStrategy) -> bool:
        try:
            if strategy.runner is not None:
                self.refuse_unusable(strategy.name)
                return True
            return self._factory(strategy.name).available()
        except Exception as error:  # a missing library, an unreachable server, a wrong database
            log.debug("strategy %s unavailable: %s", strategy.name, error)
            return False

    def zookeeper_sessions(self) -> dict[str, tuple[int, bytes]]:
        """Strategy name -> (session id, password) of each ZooKeeper session open here."""
        with self._opening:
            factories = dict(self._factories)
        sessions = {}
        for name, factory in factories.items():
            client_id = getattr(getattr(factory, "client", None), "client_id", None)
            if locks.get(name).family.startswith("zookeeper") and client_id:
                sessions[name] = client_id
        return sessions

    def close(self) -> None:
        with self._opening:
            for factory in self._factories.values():
                factory.close()
            self._factories.clear()
