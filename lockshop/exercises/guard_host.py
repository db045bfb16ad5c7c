"""The job guard's side of the lock host (``lock_host --guard``): the student's guard class
made, taken, checked and given back in the student's process, as the shop's scheduler
does it, on requests of the grader's (``remote_guards``).

A guard is made as the scheduler makes it, ``Class(state, job, fire_time, settings,
clock)``; what it uses of ``state`` is built here, from what the grader sends as plain
JSON (``guard_state``): a shop's ``ShopState`` without its web side, with lock factories
of its own (``state.strategies``) on the grading's Redis, through the grader's proxy, and
an engine of its own (``state.engine``, ``state.sessions``) on the database the grader
names for it. What that database is, and why, the grader says (``remote_guards``): on
MariaDB (exercise 22) the grading's own, whose user and password this process is then
given (its guard's rows are its lock: it must read and write them; that user may do
nothing outside the grading's database, ``lockshop.room.grading_databases``); on SQLite
(exercises 15 and 16) a file of the guard's own, beside the grader's.

Trusted with nothing: the scheduler, the jobs, their runs and the audit stay in the
grader, which asks this process only what the guard's methods answer. The check before a
write (``recheck``) runs ``ensure_held(db)`` in a transaction of this process's own, on
its own database, committed when it returns (rolled back when it raises): the job's
write transaction is the grader's, and never crosses.
"""

from __future__ import annotations

import threading
import time
from dataclasses import fields
from datetime import datetime

#: What a guard's host says its class's family is, in its greeting: a guard is no lock.
GUARD_FAMILY = "job guard"
#: The requests a guard's host answers (``lock_protocol``).
GUARD_OPS = ("guard_state", "guard", "take", "recheck", "give_back", "close_state")
_SETTINGS_TYPES = {"strategy": str, "job_guard": str}


class Guards:
    """The student's guard class, the shop states its guards are given, and its guards."""

    def __init__(self, guard_class: type) -> None:
        self.guard_class = guard_class
        self.states: dict[str, object] = {}
        #: Each guard, and the state it was made with.
        self.guards: dict[str, tuple[object, object]] = {}
        self._making = threading.Lock()
        # What a shop state is made of, imported now (as the grader sets its servers up),
        # not in a check's time.
        import shop.app  # noqa: F401
        import shop.orders.order_strategies  # noqa: F401
        import shop.state  # noqa: F401

    def do(self, request: dict) -> object:
        op = request.get("op")
        if op == "guard_state":
            self.states[str(request["state"])] = shop_state(request, self._making)
            return None
        if op == "guard":
            made = self.guard_class
            deciding = request.get("deciding_s")
            if deciding is not None:  # the grader's window between a read and its write
                made = type(made.__name__, (made,), {"deciding_s": float(deciding)})
            state = self.states[str(request["state"])]
            self.guards[str(request["guard"])] = (made(
                state, str(request["job"]), datetime.fromisoformat(str(request["fire_time"])),
                cluster_settings(request.get("settings")), time.time), state)
            return None
        if op == "take":
            return bool(self.guards[str(request["guard"])][0].take())
        if op == "recheck":  # the check last in a write's transaction: here, one of ours
            guard, state = self.guards[str(request["guard"])]
            with state.engine.begin() as db:
                guard.ensure_held(db)
            return None
        if op == "give_back":
            return self.guards.pop(str(request["guard"]))[0].give_back()
        if op == "close_state":
            state = self.states.pop(str(request["state"]), None)
            if state is not None:
                state.strategies.close()
                state.engine.dispose()
            return None
        raise ValueError(f"no such op: {op!r}")


def shop_state(request: dict, making: threading.Lock):
    """What a guard is given as ``state``: a shop's state on the grading's servers, as
    ``shop.app.create_app`` makes one. A SQLite file is the guard's own, new: its schema
    is made here; a server's database is the grading's, whose schema the grader's shop
    has made. (``making``: one schema made at a time: two runs' states share a file.)"""
    from shop.app import create_schema
    from shop.config import Config, locks_backends
    from shop.orders.order_strategies import Strategies
    from shop.state import ShopState
    from shop.store.db import backend_name, make_engine, make_sessions

    config = Config(database_url=str(request["database_url"]),
                    redis_url=_text_or_none(request.get("redis_url")),
                    instance=str(request["instance"]),
                    lock_lease_ms=int(request["lease_ms"]))
    engine = make_engine(config.database_url)
    if backend_name(config.database_url) == "sqlite":
        with making:
            create_schema(engine)
    return ShopState(config, engine, make_sessions(engine),
                     Strategies(locks_backends(config), backend_name(config.database_url)))


def cluster_settings(sent: object):
    """The run's ``ClusterSettings`` from their fields as JSON (each of its type)."""
    from shop.store.settings import ClusterSettings
    sent = sent if isinstance(sent, dict) else {}
    values = {}
    for field in fields(ClusterSettings):
        if field.name in sent:
            kind = _SETTINGS_TYPES.get(field.name, int)
            values[field.name] = kind(sent[field.name])
    return ClusterSettings(**values)


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)
