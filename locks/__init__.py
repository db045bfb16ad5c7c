"""Lock strategies behind one contract, from "no lock" to ZooKeeper.

This package knows nothing of the shop: any program can lift a strategy.

    from locks import Backends, open_factory

    factory = open_factory("local", Backends())
    with factory.lock("product:42", timeout=2.0) as lock:
        ...  # critical section; lock.ensure_held() before writing
"""

from __future__ import annotations

from . import strategies  # noqa: F401  (registers the strategies)
from .base import DistributedLock
from .errors import (
    BackendUnavailable,
    LockError,
    LockLost,
    LockNotAcquired,
    LockNotOwned,
    UnknownStrategy,
)
from .hold_log import HoldLog, HoldRecord, hold_log
from .metrics import MetricsRegistry, metrics
from .registry import (
    Backends,
    LockFactory,
    LockView,
    Strategy,
    all_strategies,
    get,
    names,
    register,
)


def open_factory(name: str, backends: Backends | None = None) -> LockFactory:
    """Open the factory of the strategy called ``name``."""
    return get(name).open(backends or Backends())


__all__ = [
    "BackendUnavailable", "Backends", "DistributedLock", "HoldLog", "HoldRecord",
    "LockError", "LockFactory", "LockLost", "LockNotAcquired", "LockNotOwned", "LockView",
    "MetricsRegistry", "Strategy", "UnknownStrategy", "all_strategies", "get", "hold_log",
    "metrics", "names", "open_factory", "register",
]
