"""What one shop process holds: its configuration, database and lock factories."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from flask import current_app
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from locks import LockError
from shop.config import Config
from shop.errors import ShopError, Unprocessable
from shop.i18n import lazy_gettext
from shop.jobs.custom import guard_names
from shop.metrics import counters
from shop.orders.idempotency import KeySweeper, Placed, place_once
from shop.orders.order_path import OrderContext, OrderRequest, check_request
from shop.orders.stocktake import Stocktake, take_stocktake
from shop.orders.order_strategies import Strategies
from shop.store.models import PlacedOrder
from shop.store.settings import (
    JOB_GUARDS,
    ClusterSettings,
    read_settings,
    write_settings,
)


@dataclass
class ShopState:
    config: Config
    engine: Engine
    sessions: sessionmaker[Session]
    strategies: Strategies
    _election: object = field(default=None, repr=False)
    _election_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _key_sweeper: KeySweeper = field(default_factory=KeySweeper, repr=False)

    def leader_election(self):
        """This instance as a candidate to run the jobs (started on first use): the
        project's election, or the one ``Config.election`` names."""
        from locks.custom import load_election_class
        from locks.zk_election import LeaderElection
        with self._election_lock:
            if self._election is None:
                election = load_election_class(self.config.election) \
                    if self.config.election else LeaderElection
                factory = self.strategies.lock_factory("zk_fair")
                self._election = election(factory, "jobs").start()
            return self._election

    @property
    def default_settings(self) -> ClusterSettings:
        return ClusterSettings.from_config(self.config)

    def settings(self) -> ClusterSettings:
        """The cluster's current settings, read fresh from the database."""
        with self.engine.begin() as db:
            return read_settings(db, self.default_settings)

    def change_settings(self, *, strategy: str | None = None, job_guard: str | None = None,
                        **values: int | None) -> ClusterSettings:
        """Check a change of the cluster's settings, write it for every instance, and
        return the settings now in force. ``Unprocessable`` (and nothing written) for a
        strategy or job guard that does not exist or cannot run here."""
        if strategy is not None:
            if strategy not in self.strategies.names():
                raise Unprocessable(lazy_gettext("unknown strategy %(name)r", name=strategy),
                                    known=self.strategies.names())
            self.strategies.refuse_unusable(strategy)
        if job_guard is not None:
            known = (*JOB_GUARDS, *guard_names())  # and the guards plugged in from files
            if job_guard not in known:
                raise Unprocessable(lazy_gettext("'job_guard' must be one of %(known)s",
                                                 known=", ".join(known)),
                                    known=list(known))
            if job_guard == "leader" and not self.strategies.available("zk_fair"):
                raise Unprocessable(lazy_gettext(
                    "leader election needs ZooKeeper (LOCKSHOP_ZK_HOSTS), and it cannot be "
                    "reached"), requires=["zookeeper"])
        with self.sessions.begin() as session:
            write_settings(session, strategy=strategy, job_guard=job_guard, **values)
        return self.settings()

    def context(self, settings: ClusterSettings | None = None) -> OrderContext:
        """Who works, and how: this instance under the cluster's current settings."""
        settings = settings or self.settings()
        return OrderContext(instance=self.config.instance, strategy=settings.strategy,
                            business_delay_ms=settings.business_delay_ms,
                            lock_timeout_ms=self.config.lock_timeout_ms)

    def stocktake(self, product_id: int) -> Stocktake:
        """Count one product under the current strategy's read lock."""
        context = self.context()
        return take_stocktake(self.sessions, self.strategies.lock_factory(context.strategy),
                              product_id, context)

    def place_order_once(self, request: OrderRequest) -> Placed:
        """Place an order, or, when its idempotency key made one already, return that."""
        if request.key is not None:
            self._key_sweeper.sweep_if_due(self.engine)
        return place_once(self.place_order, self.engine, request)

    def place_order(self, request: OrderRequest) -> PlacedOrder:
        """Place an order under the cluster's current strategy and business delay."""
        # One short read: the settings in force, then whether the request can be met.
        with self.engine.begin() as db:
            context = self.context(read_settings(db, self.default_settings))
            with _refusals_counted(context.strategy):
                kind = check_request(db, request)
        runner = self.strategies.runner(context.strategy)
        with _refusals_counted(context.strategy):
            order = runner(self.engine, request, context, kind)
        counters.add("orders", strategy=context.strategy, outcome="placed")
        return order


@contextmanager
def _refusals_counted(strategy: str) -> Iterator[None]:
    """Count an order that was refused or could not get its lock, by why."""
    try:
        yield
    except ShopError as error:
        counters.add("orders", strategy=strategy, outcome=error.code)
        raise
    except LockError as error:
        counters.add("orders", strategy=strategy, outcome=type(error).__name__)
        raise


def shop() -> ShopState:
    """The state of the app handling the current request."""
    return current_app.extensions["lockshop"]
