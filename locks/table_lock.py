"""A lock table with a unique key: insert a row to lock, delete it to unlock.

Article A1's algorithm (a table with a unique key), one transaction per step:

acquire
    1. ``DELETE FROM lockshop_locks WHERE name = :name AND expires_at_ms < :now``:
       a holder that crashed left its row behind; once the row's lease has
       expired, the lock is free to take over.
    2. ``INSERT INTO lockshop_locks (name, owner, expires_at_ms)``: the
       primary key on ``name`` lets exactly one insert succeed. Everyone
       else gets a unique-key violation: not acquired, try again later.
    3. Bump this name's counter in ``lockshop_fences`` and keep the new value
       as the **fencing token**: it grows with every acquisition, so a write
       carrying an older fencing token can be told apart and refused.
release
    ``DELETE ... WHERE name = :name AND owner = :owner``. Deleting nothing
    means the lease expired and someone else took the lock over: the holder
    learns it (``LockLost``) instead of deleting a stranger's row.

How it fails: expiry is judged by the clocks of the machines that acquire,
so a clock running ahead takes over a live lock early; and a holder paused
longer than its lease (GC, SIGSTOP, a slow disk) overlaps with the next
holder. Both are why the fencing token exists: the shop writes stock only
with a fencing token newer than the last one it stored, so the late holder's
write is refused (see ``shop.orders.order_path``).
"""

from __future__ import annotations

import time
import uuid

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError, IntegrityError

from .base import DistributedLock
from .errors import LockLost
from .registry import Backends, LockFactory, LockView, Strategy

metadata = MetaData()

lock_rows = Table(
    "lockshop_locks", metadata,
    Column("name", String(200), primary_key=True),
    Column("owner", String(100), nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
)

fence_counters = Table(
    "lockshop_fences", metadata,
    Column("name", String(200), primary_key=True),
    # Stored as "last_token", its name before the word was settled, so that a
    # database made then keeps its counters (restarted at 1, every write would
    # be refused as stale).
    Column("last_token", Integer, key="last_fencing_token", nullable=False),
)


def now_ms() -> int:
    return int(time.time() * 1000)


class TableLock(DistributedLock):
    """Mutual exclusion through a row with a unique key, with a lease."""

    backend = "database"
    #: Any database error in a lock step: its connection, its server, its disk.
    backend_errors = (DBAPIError,)

    def __init__(self, name: str, *, engine: Engine, lease_ms: int, **options) -> None:
        super().__init__(name, **options)
        self._engine = engine
        self._lease_ms = lease_ms
        self._token_owner = f"{uuid.uuid4().hex[:12]}@{self.owner}"[:100]

    def _try_acquire(self) -> bool:
        now = now_ms()
        try:
            with self._engine.begin() as db:
                # A lease is over at its last millisecond, the moment _still_held
                # and look() stop counting it: <=, not <.
                db.execute(delete(lock_rows).where(lock_rows.c.name == self.name,
                                                   lock_rows.c.expires_at_ms <= now))
                db.execute(insert(lock_rows).values(name=self.name, owner=self._token_owner,
                                                    expires_at_ms=now + self._lease_ms))
                self._fencing_token = _next_fencing_token(db, self.name)
            return True
        except IntegrityError:
            return False  # someone holds it: the unique key said no
        except DBAPIError as error:
            if _is_busy(error):
                return False  # SQLite's write lock was busy: just another "not now"
            raise  # the base says BackendUnavailable

    def _release(self) -> None:
        with self._engine.begin() as db:
            deleted = db.execute(delete(lock_rows).where(
                lock_rows.c.name == self.name, lock_rows.c.owner == self._token_owner)).rowcount
        if deleted == 0:
            raise LockLost(self.name, f"lease of {self._lease_ms} ms expired and the lock "
                                      "was taken over")

    def _still_held(self) -> bool:
        with self._engine.begin() as db:
            expires = db.scalar(select(lock_rows.c.expires_at_ms).where(
                lock_rows.c.name == self.name, lock_rows.c.owner == self._token_owner))
        return expires is not None and expires > now_ms()


def _next_fencing_token(db, name: str) -> int:
    # Only the lock's holder gets here, so no two transactions bump one
    # name's counter at once; the first acquisition creates the row.
    bumped = db.execute(update(fence_counters).where(fence_counters.c.name == name)
                        .values(last_fencing_token=fence_counters.c.last_fencing_token + 1)
                        ).rowcount
    if bumped == 0:
        db.execute(insert(fence_counters).values(name=name, last_fencing_token=1))
    return db.scalar(select(fence_counters.c.last_fencing_token)
                     .where(fence_counters.c.name == name))


def _create_tables(engine: Engine) -> None:
    # Several instances open this factory at the same moment, and on
    # PostgreSQL two CREATE TABLEs of one name collide: the loser looks again.
    for attempt in (1, 2, 3):
        try:
            metadata.create_all(engine)
            return
        except DBAPIError:
            if attempt == 3:
                raise
            time.sleep(0.05 * attempt)


def _is_busy(error: DBAPIError) -> bool:
    return "database is locked" in str(error.orig) or "Deadlock found" in str(error.orig)


class TableLockFactory(LockFactory):
    lock_class = TableLock

    def __init__(self, strategy: Strategy, backends: Backends) -> None:
        if not backends.database_url:
            raise ValueError("the table lock needs a database URL")
        from sqlalchemy import create_engine
        super().__init__(strategy, backends)
        self.engine = create_engine(_driver_url(backends.database_url), pool_pre_ping=True,
                                    **_engine_options(backends.database_url))
        _create_tables(self.engine)

    def lock_arguments(self) -> dict:
        return {"engine": self.engine, "lease_ms": self.backends.lease_ms}

    def available(self) -> bool:
        try:
            with self.engine.connect():
                return True
        except DBAPIError:
            return False

    def look(self, name: str) -> LockView:
        """The lock's row: its owner and when its lease ends (no waiters: they poll)."""
        with self.engine.connect() as db:
            row = db.execute(select(lock_rows.c.owner, lock_rows.c.expires_at_ms)
                             .where(lock_rows.c.name == name)).first()
        holders = [] if row is None else [{
            "token": row.owner, "owner": row.owner.split("@", 1)[-1],
            "expires_in_ms": row.expires_at_ms - now_ms()}]
        return LockView(f"row {name!r} of {lock_rows.name}", holders)

    def close(self) -> None:
        self.engine.dispose()


_DRIVERS = {"postgresql": "postgresql+psycopg", "mysql": "mysql+pymysql",
            "mariadb": "mariadb+pymysql"}


def _driver_url(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    return _DRIVERS.get(scheme, scheme) + sep + rest


def _engine_options(url: str) -> dict:
    if url.startswith("sqlite"):
        # The locking statements are single writes: SQLite's own locking is
        # enough, but a writer must wait for the file lock, not fail at once.
        return {"connect_args": {"timeout": 30, "check_same_thread": False}}
    return {"pool_size": 10, "max_overflow": 20}
