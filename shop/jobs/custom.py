"""A job guard class from a file, plugged in by name: a student's, or anyone's.

``Config.extra_guards`` holds ``name=FILE[:Class]`` entries (``LOCKSHOP_EXTRA_GUARDS``),
as ``Config.extra_locks`` holds locks: each names a subclass of ``JobGuard``, and the
cluster setting ``job_guard`` may then be that name. The scheduler makes one guard per
run, as it makes its own: ``Class(state, job, fire_time, settings, clock)``.

A file that gives no guard class raises ``LockClassError`` with one readable line: it is
loaded as a lock class is (``locks.custom.load_class``), only the base class differs.
"""

from __future__ import annotations

import re

from locks.custom import LockClassError, load_class
from shop.jobs.guards import PLUGGED_IN, JobGuard, LockGuard

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def load_guard_class(spec: str) -> type[JobGuard]:
    """The job guard class ``spec`` (``FILE[:Class]``) names; ``LockClassError`` saying
    why when there is none."""
    return load_class(spec, JobGuard, "job guard class")


def register_guard(named_spec: str) -> type[JobGuard]:
    """``name=FILE[:Class]`` (as ``LOCKSHOP_EXTRA_GUARDS`` holds it) as a job guard the
    setting ``job_guard`` can name."""
    name, equals, spec = named_spec.partition("=")
    if not equals or not _IDENTIFIER.match(name):
        raise LockClassError(f"{named_spec!r}: expected name=FILE[:Class]")
    guard_class = load_guard_class(spec)
    if PLUGGED_IN.get(name, guard_class) is not guard_class:
        raise LockClassError(f"job guard {name!r} is already registered")
    PLUGGED_IN[name] = guard_class
    return guard_class


def guard_names() -> tuple[str, ...]:
    """The names of the guards plugged in, in the order they came."""
    return tuple(PLUGGED_IN)


class StrategyLockGuard(LockGuard):
    """The project's ``LockGuard`` (the strategy's lock named for the job, tried once,
    fenced by its token), made as a guard plugged in by name is: exercises 15 and 16
    grade it as their reference."""

    def __init__(self, state, job: str, fire_time, settings, clock) -> None:
        factory = state.strategies.lock_factory(settings.strategy)
        lock = factory.lock(f"job:{job}", timeout=0, label=f"{settings.strategy} (jobs)")
        super().__init__(state, job, lock, settings.strategy)
