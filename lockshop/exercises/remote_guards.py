"""The grader's side of a job guard in the lock host (exercises 15, 16 and 22): the
student's guard class as the grader's runs make and call it, while the guard itself lives
in the student's process (``guard_host``).

``RemoteGuards`` stands where the guard class stood: a run calls it as the scheduler calls
a guard class, ``guards(state, job, fire_time, settings, clock)``, and gets a
``RemoteGuard`` whose ``take()``, ``ensure_held(db)`` and ``give_back()`` go over
``lock_protocol`` to the host, in the host thread named for the run's thread (the guard's
lock is owned there, as it is by the scheduler's run thread in a shop). The scheduler's
part, the job, its writes, its run's outcome and the audit stay here: what the guard
answers is believed as a guard's own answer (True or False, or the error it raised), and
what the checks count (reminders sent, given twice, runs that stopped) is counted here or
read from a database the student's process does not write.

Each shop state of the grader's (``job_steps.shop_states``) is given a twin in the host
(``guard_state``): its instance's name and lease, the grading's Redis as the student's
processes reach it (the grader's proxy, ``Grading.backends``), and a database:

- on SQLite (15 and 16), a file of the guard's own, made by the grader for the student's
  user (a sticky folder of its own, as ``databases.students_file``), with the shop's
  tables: SQLite has one writer at a time, and a guard that writes in its check before a
  write (the project's ``LockGuard`` hands its fencing token to ``job_fences`` and checks
  it there) would wait for the job's write transaction, which waits for the guard. The
  grader's own database, whose reminders the checks count, is closed to the student.
- on MariaDB (22), the grading's database itself, URL, user and password: the guard's
  lock is a row of the job's table there, which it must read and write. The grading's
  user may do nothing outside that database (``lockshop.room.grading_databases``), and
  C41's verdict rests on the guards' answers alone, counted here.

``ensure_held(db)`` cannot hand the job's transaction across a process: the host checks
in a transaction of its own on its database (``guard_host``).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from sqlalchemy.engine import make_url

from lockshop.exercises.remote_locks import LockHost


@contextmanager
def student_guards(grading, *, deciding_s: float | None = None) -> Iterator:
    """The student's guard class as a run makes a guard, for one check: loaded in this
    process (an exercise graded in process), or ``RemoteGuards`` on the grading's lock
    host (its host states closed after). ``deciding_s``: a guard held that long in its
    ``deciding()``, between its read and its write (exercise 22's window)."""
    if grading.host is None:
        made = grading.lock_class
        if deciding_s is not None:
            made = type(made.__name__, (made,), {"deciding_s": deciding_s})
        yield made
        return
    guards = RemoteGuards(grading.host, grading.backends().redis_url, grading.runtime,
                          deciding_s=deciding_s)
    try:
        yield guards
    finally:
        guards.close()


class RemoteGuards:
    """The student's guard class, in ``host``: makes a guard there per run, on a host
    state per shop state of the grader's."""

    _numbers = itertools.count(1)

    def __init__(self, host: LockHost, redis_url: str | None, runtime: Path, *,
                 deciding_s: float | None = None) -> None:
        self.host, self.redis_url, self.runtime = host, redis_url, runtime
        self.deciding_s = deciding_s
        #: The grader's shop states (by id, kept alive here) -> their twins' names.
        self._states: dict[int, tuple[object, str]] = {}
        #: The grader's databases -> the host's (a SQLite file of the guard's own).
        self._databases: dict[str, str] = {}

    def __call__(self, state, job: str, fire_time, settings, clock) -> RemoteGuard:
        """A guard made in the host as ``Class(state, job, fire_time, settings, clock)``
        (``clock``: the host's own ``time.time``, as the grader's runs give theirs)."""
        number = f"g{next(self._numbers)}"
        self.host.call("guard", guard=number, state=self._state_of(state), job=job,
                       fire_time=fire_time.isoformat(), settings=asdict(settings),
                       deciding_s=self.deciding_s)
        return RemoteGuard(self.host, number)

    def _state_of(self, state) -> str:
        known = self._states.get(id(state))
        if known is not None:
            return known[1]
        number = f"s{next(self._numbers)}"
        config = state.config
        self.host.call("guard_state", state=number, instance=config.instance,
                       lease_ms=config.lock_lease_ms, redis_url=self.redis_url,
                       database_url=self._database_of(config.database_url))
        self._states[id(state)] = (state, number)
        return number

    def _database_of(self, url: str) -> str:
        """The database the host's twin of a state on ``url`` is given."""
        if make_url(url).get_backend_name() != "sqlite":
            return url
        if url not in self._databases:
            folder = self.runtime / f"guard-{len(self._databases) + 1}-{next(self._numbers)}"
            folder.mkdir(parents=True)
            folder.chmod(0o1777)  # the student's user writes its journal beside it
            path = folder / "guard.db"
            path.touch()
            path.chmod(0o666)
            self._databases[url] = f"sqlite:///{path}"
        return self._databases[url]

    def close(self) -> None:
        """Close the host's states, in a thread of its own: nothing the check waits for."""
        states, self._states = self._states, {}
        if states:
            threading.Thread(target=self._close, args=([n for _s, n in states.values()],),
                             daemon=True, name="guard states").start()

    def _close(self, numbers: list[str]) -> None:
        for number in numbers:
            try:
                self.host.call("close_state", state=number)
            except Exception:  # noqa: BLE001 - the grader's clean-up; the host may be gone
                pass


class RemoteGuard:
    """One of the student's guards, in the host: what a run calls on its guard."""

    name = "exercise"

    def __init__(self, host: LockHost, number: str) -> None:
        self.host, self.number = host, number

    def take(self) -> bool:
        return bool(self.host.call("take", guard=self.number))

    def ensure_held(self, db) -> None:
        """Raise what the guard raises (``LockLost``) unless it is still held; ``db`` (the
        job's transaction, here) stays here: the host checks in a transaction of its own."""
        self.host.call("recheck", guard=self.number)

    def give_back(self) -> None:
        self.host.call("give_back", guard=self.number)

    def __repr__(self) -> str:
        return f"<your guard {self.number} in its process>"
