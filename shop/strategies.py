"""The strategies the shop can guard its order path with.

Each lock strategy's factory is opened once per process, on first use, and
kept: the ``local`` strategy's locks only exclude each other because every
request of this process shares them, and a Redis factory's connection pool is
worth keeping too.
"""

from __future__ import annotations

import logging
import threading

import locks
from locks import Backends, LockFactory

log = logging.getLogger(__name__)


class Guards:
    """Opens and caches one ``LockFactory`` per strategy for this process."""

    def __init__(self, backends: Backends) -> None:
        self.backends = backends
        self._factories: dict[str, LockFactory] = {}
        self._guard = threading.Lock()

    def factory(self, name: str) -> LockFactory:
        """The factory for ``name``; ``locks.UnknownStrategy`` if there is none."""
        strategy = locks.get(name)
        with self._guard:
            if name not in self._factories:
                self._factories[name] = strategy.open(self.backends)
            return self._factories[name]

    def is_known(self, name: str) -> bool:
        return name in locks.names()

    def describe(self) -> list[dict]:
        """Every strategy, as ``GET /api/strategies`` lists it."""
        return [
            {"name": s.name, "family": s.family, "summary": s.summary,
             "correct_across_instances": s.correct_across_instances,
             "failure_mode": s.failure_mode, "requires": list(s.requires),
             "available": self._available(s.name)}
            for s in locks.all_strategies()
        ]

    def _available(self, name: str) -> bool:
        try:
            return self.factory(name).available()
        except Exception as error:  # a missing library or an unreachable server alike
            log.debug("strategy %s unavailable: %s", name, error)
            return False

    def close(self) -> None:
        with self._guard:
            for factory in self._factories.values():
                factory.close()
            self._factories.clear()
