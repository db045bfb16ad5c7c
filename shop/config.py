"""Configuration: read once from ``LOCKSHOP_*`` environment variables.

Configuration flows one way: environment -> ``Config`` -> app factory ->
strategy factory. No other module reads ``os.environ``.

Cluster-wide settings that change at run time (the current strategy, the
business delay) live in the database instead, so that switching them once
switches every instance; the values here only seed them.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

PREFIX = "LOCKSHOP_"
DEFAULT_DATABASE_URL = "sqlite:///.lockshop/lockshop.db"  # relative to the working directory


class ConfigError(ValueError):
    """A configuration value is missing or malformed."""


@dataclass(frozen=True)
class Config:
    database_url: str = DEFAULT_DATABASE_URL
    #: Strategy and delay written to the settings table when it is first created.
    strategy: str = "none"
    business_delay_ms: int = 0
    #: How long an order waits for its lock before answering 503.
    lock_timeout_ms: int = 5000
    #: How long a lease lasts for locks that expire (lock table, Redis).
    lock_lease_ms: int = 10_000
    instance: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    #: When set, admin endpoints require ``Authorization: Bearer <token>``.
    admin_token: str | None = None
    redis_url: str | None = None
    redis_urls: tuple[str, ...] = ()
    zk_hosts: str | None = None
    #: Fault hooks for the broken-on-purpose locks, e.g. "crash_after_setnx".
    faults: tuple[str, ...] = ()
    #: Scheduled jobs, as seeded into the cluster settings (see shop.settings).
    job_guard: str = "strategy"
    job_interval_ms: int = 5000
    unpaid_expiry_ms: int = 60_000
    reminder_after_ms: int = 20_000
    #: Added to this instance's clock by its job scheduler: a late clock, for labs and tests.
    clock_skew_ms: int = 0
    #: Lock classes plugged in from files as strategies, ``name=FILE[:Class]`` each:
    #: a student's lock (``lockshop up --lock``), sold with like any other strategy.
    extra_locks: tuple[str, ...] = ()
    #: Job guard classes plugged in from files, ``name=FILE[:Class]`` each: the setting
    #: ``job_guard`` may name them (a student's guard: ``lockshop exercise check``).
    extra_guards: tuple[str, ...] = ()
    #: Order steps plugged in from files as strategies, ``name=FILE[:Name]`` each: a
    #: student's read-check-write in SQL (``shop.orders.custom_steps``).
    extra_steps: tuple[str, ...] = ()
    #: The job guard ``leader``'s election, from a file (``FILE[:Class]``, a subclass of
    #: ``locks.zk_election.Candidate``): a student's, in place of ``LeaderElection``.
    election: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides) -> Config:
        """Build from ``LOCKSHOP_<FIELD>`` variables; ``overrides`` win over them."""
        environ = os.environ if environ is None else environ
        values: dict = {}
        for f in fields(cls):
            raw = environ.get(PREFIX + f.name.upper())
            if raw is None or raw == "":
                continue
            values[f.name] = _parse(f.name, raw, f.type)
        config = cls(**values)
        return replace(config, **overrides) if overrides else config

    def to_env(self) -> dict[str, str]:
        """The ``LOCKSHOP_*`` variables that rebuild this config in a child process."""
        env = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or value == ():
                continue
            env[PREFIX + f.name.upper()] = ",".join(value) if isinstance(value, tuple) else str(value)
        return env

    def __post_init__(self) -> None:
        if self.business_delay_ms < 0:
            raise ConfigError(f"{PREFIX}BUSINESS_DELAY_MS must be >= 0, got {self.business_delay_ms}")
        if self.lock_lease_ms < 1:
            raise ConfigError(f"{PREFIX}LOCK_LEASE_MS must be >= 1, got {self.lock_lease_ms}")
        if self.lock_timeout_ms < 0:
            raise ConfigError(f"{PREFIX}LOCK_TIMEOUT_MS must be >= 0, got {self.lock_timeout_ms}")
        plugged_in = tuple(named.partition("=")[0] for named in self.extra_guards)
        if self.job_guard not in ("strategy", "leader", *plugged_in):
            also = f" or a name of {PREFIX}EXTRA_GUARDS" if plugged_in else ""
            raise ConfigError(f"{PREFIX}JOB_GUARD must be 'strategy' or 'leader'{also}, "
                              f"got {self.job_guard!r}")
        for name in ("job_interval_ms", "unpaid_expiry_ms", "reminder_after_ms"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{PREFIX}{name.upper()} must be >= 0, got {getattr(self, name)}")


def _parse(name: str, raw: str, type_name: object) -> object:
    kind = str(type_name)
    if kind == "int":
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{PREFIX}{name.upper()} must be a whole number, got {raw!r}") from None
    if kind.startswith("tuple"):
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    return raw


def locks_backends(config: Config):
    """Where the lock backends live, as the ``locks`` package wants it."""
    from locks import Backends
    return Backends(redis_url=config.redis_url, redis_urls=config.redis_urls,
                    zk_hosts=config.zk_hosts, database_url=config.database_url,
                    lease_ms=config.lock_lease_ms, faults=config.faults)
