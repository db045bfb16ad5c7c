"""The catalogue: every lock strategy this package offers, in teaching order.

Names are stable: the API, the CLI, reports and tests use them.
"""

from __future__ import annotations

from .registry import Strategy, register

NONE = register(Strategy(
    name="none",
    family="none",
    summary="No guard: the read-check-write runs unprotected.",
    correct_across_instances=False,
    factory="locks.no_lock:NoLockFactory",
    failure_mode="Concurrent buyers read the same stock and each writes stock - 1: "
                 "lost updates, then overselling.",
))

LOCAL = register(Strategy(
    name="local",
    family="in-process",
    summary="A threading.Lock per product, per process.",
    correct_across_instances=False,
    correct_within_one_process=True,
    factory="locks.local_lock:LocalLockFactory",
    failure_mode="Correct inside one process; each instance has its own locks, "
                 "so several instances overlap and oversell.",
))

TABLE = register(Strategy(
    name="table",
    family="database",
    summary="A row in a lock table with a unique key: insert to lock, delete to unlock; "
            "a lease lets a crashed holder's lock be taken over; fencing tokens.",
    correct_across_instances=True,
    factory="locks.table_lock:TableLockFactory",
    requires=("database",),
    failure_mode="A holder paused past its lease overlaps the next holder; fencing tokens "
                 "turn its late write into a rejected stale write.",
))
