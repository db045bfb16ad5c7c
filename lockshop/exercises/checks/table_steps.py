"""The lock row's lessons (article A1), turned on a student's table lock.

The lock is a row of ``lockshop_locks`` with a unique key on the lock's name.
A holder that must die is a process of its own (``lockshop.cluster.holder``),
killed with SIGKILL inside its section; a holder whose lease runs out is one the
grader stops calling (its row's expiry passes: read off the row, not a clock
race). What the row holds is read from the grader's database, never from the
student's code.
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import Engine, create_engine, select

from locks.table_lock import _driver_url, lock_rows, now_ms
from lockshop.exercises.checks import sale
from lockshop.exercises.grading import Check, Grading, NotApplicable, release_said
from shop.i18n import _, lazy_gettext


#: A row whose lease ends later than this (a year) has no expiry, in effect.
NO_EXPIRY_MS = 365 * 24 * 3600 * 1000


def _engine(grading: Grading) -> Engine:
    return create_engine(_driver_url(grading.database_url))


def _row(grading: Grading, name: str) -> tuple[str, int] | None:
    """The lock's row (owner, expires_at_ms), or None."""
    engine = _engine(grading)
    try:
        with engine.connect() as db:
            row = db.execute(select(lock_rows.c.owner, lock_rows.c.expires_at_ms)
                             .where(lock_rows.c.name == name)).first()
    finally:
        engine.dispose()
    return None if row is None else (row.owner, row.expires_at_ms)


def _say_row(row: tuple[str, int] | None) -> str:
    if row is None:
        return _("no row")
    left = row[1] - now_ms()
    if left > NO_EXPIRY_MS:
        return _("a row that never expires")
    return _("a row expiring in %(ms)s ms", ms=left) if left > 0 else \
        _("a row expired %(ms)s ms ago", ms=-left)


# --- C06: a holder that dies -------------------------------------------------------------

def killed_in_section(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("killed")
    problem = grading.holder_killed(name)
    if problem:
        return problem, False
    row = _row(grading, name)
    left = _say_row(row)
    got_in_at = grading.in_thread(_next_owner_gets_in, grading, name,
                                  timeout=grading.patience() + 10)
    if got_in_at is None:
        return _("after the kill: %(left)s; nobody got the lock in %(seconds)s s", left=left,
                 seconds=grading.patience()), False
    if row is not None and got_in_at < row[1]:
        return _("after the kill: %(left)s; the next owner got in %(early)s ms before that "
                 "lease ended: it took over a live lock", left=left,
                 early=row[1] - got_in_at), False
    return _("after the kill: %(left)s; the next owner got in once it had run out",
             left=left), True


def _next_owner_gets_in(grading: Grading, name: str) -> int | None:
    """The time (``now_ms()``) at which another owner had the lock, or None if it never
    got it in ``patience``. Its acquire had taken the lock over by then."""
    lock = grading.lock(name, timeout=grading.patience())
    if not lock.acquire():
        return None
    got_in_at = now_ms()
    grading.release_quietly(lock)
    return got_in_at


# --- C11: the release of a row another holder took over -------------------------------

def late_release(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("late")
    factory = grading.factory()
    a = grading.take(factory, name)
    if a is None:
        return _("A could not take the free lock"), False
    a_row = _row(grading, name)
    if a_row is None:
        return _("A took the lock, but there is no row named %(name)s in lockshop_locks",
                 name=name), False
    if a_row[1] - now_ms() > NO_EXPIRY_MS:
        # No lease runs out, so no one takes over and there is no late release: the lock
        # breaks where a holder dies instead (C06).
        grading.in_thread(release_said, a)
        return _("A's row has no expiry (%(row)s): nobody can take it over, so there is no "
                 "late release to test", row=_say_row(a_row)), NotApplicable(see="C06")
    # A stops here, as a paused holder would: its row's lease runs out.
    expired = grading.until(lambda: now_ms() >= a_row[1] + 1, seconds=grading.patience())
    if not expired:
        return _("A's row never expired: %(left)s", left=_say_row(a_row)), False
    b = grading.take(factory, name, timeout=grading.patience())
    if b is None:
        return _("B could not take the lock after A's lease ran out (%(left)s)",
                 left=_say_row(_row(grading, name))), False
    b_row = _row(grading, name)
    a_said = grading.in_thread(release_said, a)
    after = _row(grading, name)
    grading.in_thread(release_said, b)
    if after is None or after[0] != b_row[0]:
        return _("A's release %(said)s, and B's row is gone: A deleted it",
                 said=a_said), False
    return _("A's release %(said)s; B's row is still there", said=a_said), True


KILLED = Check(
    "C06",
    lazy_gettext("a holder process takes the lock and is killed (SIGKILL) inside its section"),
    lazy_gettext("its row stays behind, but its expiry frees the lock: the next owner gets in "
                 "once the lease has run out"),
    lazy_gettext("A dead holder never deletes its row. Write expires_at_ms = now + "
                 "self._lease_ms into the row, and let an acquire first delete the row of this "
                 "name whose expires_at_ms <= now_ms(), then insert its own."),
    killed_in_section)

LATE_RELEASE = Check(
    "C11",
    lazy_gettext("A's lease runs out while it holds the lock, B takes the row over, then A "
                 "releases"),
    lazy_gettext("A's release deletes nothing of B's: B's row is still there (A may learn it "
                 "lost the lock: LockLost)"),
    lazy_gettext("Delete only your own row: DELETE ... WHERE name = :name AND owner = "
                 ":owner, with owner = self._token_owner; when it deletes nothing, raise "
                 "LockLost(self.name, ...)."),
    late_release)

CHECKS = (KILLED, LATE_RELEASE)

#: The sale, with a hint in the lock row's words (the lock's row, not a key or a node).
SALE = replace(sale.SALE, hint=lazy_gettext(
    "Three processes must exclude each other through the database: every instance must "
    "insert the same row (name = self.name) into lockshop_locks, where the unique key lets "
    "only one in. If every order answered 503, the shop's ensure_held() found no live row "
    "of yours (the base class's _still_held() reads it back): write owner = "
    "self._token_owner and expires_at_ms = now_ms() + self._lease_ms."))
