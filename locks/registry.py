"""The strategy registry: every lock strategy by its stable name.

A ``Strategy`` describes one strategy (the handbook's Strategies page)
and knows how to open a ``LockFactory`` for it. Factories are opened once per
process and hand out a fresh lock per critical section, sharing whatever the
backend needs (a connection pool, a session) between them.

The factory is named by a dotted path and imported only when opened, so that
the list can show a Redis strategy on a machine without redis-py and
say that it is unavailable, instead of failing to import.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from .base import DistributedLock
from .errors import UnknownStrategy


@dataclass(frozen=True)
class Backends:
    """Where the backends live. Each is optional; a strategy names what it needs."""

    redis_url: str | None = None
    redis_urls: tuple[str, ...] = ()  # independent servers, for Redlock
    zk_hosts: str | None = None
    database_url: str | None = None
    #: How long a lease lasts, for the backends whose locks expire.
    lease_ms: int = 10_000
    #: Fault hooks that make a broken lock fail on demand (see locks.redis_broken).
    faults: tuple[str, ...] = ()


@dataclass
class LockView:
    """One lock as its backend shows it now: who holds it and who waits, read from
    the keys, znodes or rows themselves (not from anyone's bookkeeping).

    Each holder and waiter is a dict with at least ``owner`` (host:pid:thread, as
    the lock was asked by) and, where the backend has them, ``token``,
    ``expires_in_ms`` (None: never expires) and ``since`` (time.time() seconds).
    """

    where: str  # "redis key lockshop:lock:product:1"
    holders: list[dict] = field(default_factory=list)
    waiting: list[dict] = field(default_factory=list)


class LockFactory:
    """Makes locks of one strategy. Backends subclass it to hold their connections."""

    lock_class: type[DistributedLock]
    #: Whether ``read_lock`` gives a lock that readers share (a read/write lock).
    shared_reads: bool = False
    #: Whether its locks exclude anyone at all (only ``none``'s do not).
    excludes: bool = True

    def __init__(self, strategy: Strategy, backends: Backends) -> None:
        self.strategy = strategy
        self.backends = backends

    def lock(self, name: str, *, timeout: float = 5.0, label: str | None = None) -> DistributedLock:
        """A new, unheld lock on ``name``. ``label`` names its figures in the metrics
        (default: the strategy's name), so that locks held for other reasons (a
        scheduled job's) are counted apart."""
        return self.lock_class(name, strategy=label or self.strategy.name, timeout=timeout,
                               **self.lock_arguments())

    def read_lock(self, name: str, *, timeout: float = 5.0,
                  label: str | None = None) -> DistributedLock:
        """A lock for readers of ``name``. Only a read/write lock lets readers share it;
        for every other strategy it is the exclusive lock (correct, if slower)."""
        return self.lock(name, timeout=timeout, label=label)

    def lock_arguments(self) -> dict:
        """What every lock of this factory is given besides its name: the backend's
        connections and settings."""
        return {}

    def available(self) -> bool:
        """Whether the backend answers right now."""
        return True

    def look(self, name: str) -> LockView | None:
        """``name`` as the backend shows it; None where locks live only in this
        process's memory (or nowhere)."""
        return None

    def close(self) -> None:
        """Let go of connections; locks made by this factory must not be used after."""


@dataclass(frozen=True)
class Strategy:
    """One lock strategy: its name, what it is, what a load run should show."""

    name: str
    family: str
    summary: str
    #: What a load run with several instances shows when the code is right.
    correct_across_instances: bool
    #: "module:Class" of the LockFactory subclass; imported when first opened.
    factory: str
    requires: tuple[str, ...] = ()
    #: Why it fails, for the ones that are broken on purpose or by scope.
    failure_mode: str = ""
    #: Only for locks that exclude within one process and no further (``local``).
    correct_within_one_process: bool | None = None
    #: The factory class itself, for a lock plugged in from a file (``locks.custom``).
    factory_class: type[LockFactory] | None = None

    def expected_correct(self, instances: int) -> bool:
        """Whether a run with this many instances should pass the audit."""
        if instances == 1 and self.correct_within_one_process is not None:
            return self.correct_within_one_process
        return self.correct_across_instances

    def open(self, backends: Backends) -> LockFactory:
        if self.factory_class is not None:
            return self.factory_class(self, backends)
        module_name, _, class_name = self.factory.partition(":")
        factory_class = getattr(importlib.import_module(module_name), class_name)
        return factory_class(self, backends)


_strategies: dict[str, Strategy] = {}


def register(strategy: Strategy) -> Strategy:
    """Add ``strategy`` to the list; its name must be new."""
    if strategy.name in _strategies:
        raise ValueError(f"strategy {strategy.name!r} is already registered")
    _strategies[strategy.name] = strategy
    return strategy


def get(name: str) -> Strategy:
    """The strategy called ``name``, or ``UnknownStrategy``."""
    try:
        return _strategies[name]
    except KeyError:
        raise UnknownStrategy(name, names()) from None


def names() -> list[str]:
    """Every registered name, in teaching order."""
    return list(_strategies)


def all_strategies() -> list[Strategy]:
    return list(_strategies.values())
