"""What one shop process holds: its configuration, database and lock factories."""

from __future__ import annotations

from dataclasses import dataclass

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
from .strategies import Strategies


@dataclass
class ShopState:
    config: Config
    engine: Engine
    sessions: sessionmaker[Session]
    strategies: Strategies

    @property
    def default_settings(self) -> ClusterSettings:
        return ClusterSettings(self.config.strategy, self.config.business_delay_ms)

    def settings(self) -> ClusterSettings:
        """The cluster's current settings, read fresh from the database."""
        with self.sessions.begin() as session:
            return read_settings(session, self.default_settings)

    def place_order(self, request: OrderRequest) -> Order:
        """Place an order under the cluster's current strategy and business delay."""
        settings = self.settings()
        context = OrderContext(instance=self.config.instance, strategy=settings.strategy,
                               business_delay_ms=settings.business_delay_ms,
                               lock_timeout_ms=self.config.lock_timeout_ms)
        runner = self.strategies.runner(settings.strategy)
        try:
            order = runner(self.sessions, request, context)
        except ShopError as error:
            counters.add("orders", strategy=settings.strategy, outcome=error.code)
            raise
        except LockError as error:
            counters.add("orders", strategy=settings.strategy, outcome=type(error).__name__)
            raise
        counters.add("orders", strategy=settings.strategy, outcome="placed")
        return order


def shop() -> ShopState:
    """The state of the app handling the current request."""
    return current_app.extensions["lockshop"]
