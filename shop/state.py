"""What one shop process holds: its configuration, database and lock factories."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from flask import current_app
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from locks import LockError

from .config import Config
from .errors import ShopError
from .metrics import counters
from .models import Order
from .orders import OrderContext, OrderRequest
from .settings import ClusterSettings, read_settings
from .stocktake import Stocktake, take_stocktake
from .strategies import Strategies


@dataclass
class ShopState:
    config: Config
    engine: Engine
    sessions: sessionmaker[Session]
    strategies: Strategies
    _election: object = field(default=None, repr=False)
    _election_guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def leader_election(self):
        """This instance as a candidate to run the jobs (started on first use)."""
        from locks.zk_election import LeaderElection
        with self._election_guard:
            if self._election is None:
                factory = self.strategies.lock_factory("zk_fair")
                self._election = LeaderElection(factory, "jobs").start()
            return self._election

    @property
    def default_settings(self) -> ClusterSettings:
        return ClusterSettings.from_config(self.config)

    def settings(self) -> ClusterSettings:
        """The cluster's current settings, read fresh from the database."""
        with self.sessions.begin() as session:
            return read_settings(session, self.default_settings)

    def context(self) -> OrderContext:
        """Who works, and how: this instance under the cluster's current settings."""
        settings = self.settings()
        return OrderContext(instance=self.config.instance, strategy=settings.strategy,
                            business_delay_ms=settings.business_delay_ms,
                            lock_timeout_ms=self.config.lock_timeout_ms)

    def stocktake(self, product_id: int) -> Stocktake:
        """Count one product under the current strategy's read lock."""
        context = self.context()
        return take_stocktake(self.sessions, self.strategies.lock_factory(context.strategy),
                              product_id, context)

    def place_order(self, request: OrderRequest) -> Order:
        """Place an order under the cluster's current strategy and business delay."""
        context = self.context()
        runner = self.strategies.runner(context.strategy)
        try:
            order = runner(self.sessions, request, context)
        except ShopError as error:
            counters.add("orders", strategy=context.strategy, outcome=error.code)
            raise
        except LockError as error:
            counters.add("orders", strategy=context.strategy, outcome=type(error).__name__)
            raise
        counters.add("orders", strategy=context.strategy, outcome="placed")
        return order


def shop() -> ShopState:
    """The state of the app handling the current request."""
    return current_app.extensions["lockshop"]
