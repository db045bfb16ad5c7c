"""Engines and sessions for SQLite, PostgreSQL and MariaDB/MySQL.

Transactions are part of the lesson, so the order path opens them itself
(``with sessions.begin() as session:``). This module only makes sure a
transaction is a real one on every database.
"""

from __future__ import annotations

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

# Driverless URLs name the drivers we ship extras for.
_DEFAULT_DRIVERS = {"postgresql": "postgresql+psycopg", "mysql": "mysql+pymysql",
                    "mariadb": "mariadb+pymysql"}


def normalise_url(url: str) -> str:
    """``postgresql://…`` -> ``postgresql+psycopg://…`` and so on; others unchanged."""
    scheme, sep, rest = url.partition("://")
    return _DEFAULT_DRIVERS.get(scheme, scheme) + sep + rest if sep else url


def backend_name(url: str) -> str:
    """'sqlite', 'postgresql' or 'mysql' (MariaDB counts as mysql)."""
    name = make_url(normalise_url(url)).get_backend_name()
    return "mysql" if name == "mariadb" else name


#: Execution options of a SQLite transaction: its BEGIN mode, and how long
#: it may wait for the database's write lock (milliseconds).
SQLITE_BEGIN = "sqlite_begin"
SQLITE_BUSY_MS = "sqlite_busy_ms"
DEFAULT_SQLITE_BUSY_MS = 30_000


def make_engine(url: str) -> Engine:
    url = normalise_url(url)
    # One pooled connection per server thread, and some spare for the jobs. (With
    # SQLAlchemy's default of 5 for SQLite, a busy instance opened and closed a
    # connection, with its pragmas, for most transactions.)
    if backend_name(url) == "sqlite":
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False},
                               pool_size=20, max_overflow=10)
        _make_sqlite_transactional(engine)
        return engine
    return create_engine(url, pool_size=20, max_overflow=10, pool_pre_ping=True,
                         pool_recycle=1800, connect_args=UNREACHABLE[backend_name(url)])


#: How long a database server that does not answer may hold a thread. Without these a
#: link cut between an instance and its database (a partition drops packets, it does
#: not refuse them) hangs a request for the kernel's retransmissions, about 15 minutes;
#: with them it is a 503 within seconds. None fires on a slow answer: a lock wait is
#: bounded by the lock timeout, and the server's kernel answers keepalives meanwhile.
UNREACHABLE = {
    "postgresql": {"connect_timeout": 5,
                   # What we sent and the server never acknowledged, after 10 s.
                   "tcp_user_timeout": 10_000,
                   # Nothing outstanding, no answer: the server is gone after 5 + 3 x 2 s.
                   "keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2,
                   "keepalives_count": 3},
    "mysql": {"connect_timeout": 5, "read_timeout": 30, "write_timeout": 30},
}


def _make_sqlite_transactional(engine: Engine) -> None:
    # pysqlite defers BEGIN until the first write, so a "transaction" that
    # reads first is not one. SQLAlchemy's documented fix: turn the driver's
    # handling off and emit BEGIN ourselves.
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # pragma: no cover - driver hook
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        # WAL lets readers run while one process writes; the busy timeout makes
        # a writer wait for the file lock instead of failing at once.
        cursor.execute("PRAGMA journal_mode=WAL")
        # NORMAL, as WAL databases usually run: a commit no longer waits for an
        # fsync of the log (0.2 ms of the 0.23 ms a small write transaction took
        # here). A crash of the shop loses nothing; a power cut or kernel crash
        # may lose the last commits, never the database's consistency.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={DEFAULT_SQLITE_BUSY_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:  # pragma: no cover - driver hook
        # A transaction may ask for "BEGIN IMMEDIATE": take the write lock up
        # front (SQLite's equivalent of SELECT ... FOR UPDATE).
        options = connection.get_execution_options()
        mode = options.get(SQLITE_BEGIN, "")
        if mode not in ("", "DEFERRED", "IMMEDIATE", "EXCLUSIVE"):
            raise ValueError(f"unknown SQLite BEGIN mode {mode!r}")
        busy_ms = int(options.get(SQLITE_BUSY_MS, DEFAULT_SQLITE_BUSY_MS))
        # The pragma belongs to the pooled connection: set it back for the
        # next transaction only when this one changed it.
        if connection.info.get(SQLITE_BUSY_MS, DEFAULT_SQLITE_BUSY_MS) != busy_ms:
            connection.exec_driver_sql(f"PRAGMA busy_timeout={busy_ms}")
            connection.info[SQLITE_BUSY_MS] = busy_ms
        connection.exec_driver_sql(f"BEGIN {mode}".strip())


def begin_writing(session: Session) -> None:
    """Start ``session``'s transaction as a writer: ``BEGIN IMMEDIATE`` on SQLite.

    A SQLite transaction that reads and then writes cannot wait for the write
    lock if another connection committed since its read: it fails at once
    with "database is locked". Taking the write lock first avoids that. Other
    databases lock rows as they go; for them this is a no-op.
    """
    if session.get_bind().dialect.name == "sqlite":
        session.connection(execution_options={SQLITE_BEGIN: "IMMEDIATE"})


def make_sessions(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def engine_of(sessions: sessionmaker[Session]) -> Engine:
    """The engine ``sessions`` are bound to: the order path runs on it directly."""
    return sessions.kw["bind"]


def is_unavailable(error: DBAPIError) -> bool:
    """Whether a database error means "cannot reach the database" rather than bad SQL."""
    # By class, not by name: the drivers subclass them (psycopg's ConnectionTimeout,
    # a server cut off, is an OperationalError by another name).
    return bool(error.connection_invalidated) or isinstance(error, (OperationalError,
                                                                    InterfaceError))
