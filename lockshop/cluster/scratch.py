"""Throwaway databases on a server: created for a test or a benchmark, dropped after."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from shop.store.db import backend_name, normalise_url

#: This machine's database servers, as the benchmarks, demo and report reach them by default.
DEFAULT_SERVERS = {"postgresql": "postgresql://postgres@127.0.0.1:5432/postgres",
                   "mysql": "mysql://root@127.0.0.1:3306/"}


@contextmanager
def scratch_database(admin_url: str, prefix: str = "lockshop_scratch") -> Iterator[str]:
    """Create a uniquely named database through ``admin_url``; yield its URL; drop it."""
    admin_url = normalise_url(admin_url)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    # WITH (FORCE): instances killed mid-run may leave connections behind.
    force = " WITH (FORCE)" if backend_name(admin_url) == "postgresql" else ""
    # Pre-ping: the server may have been restarted meanwhile (a soak's fault), and the
    # connection that created the database with it.
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(f"CREATE DATABASE {name}")
        try:
            yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                connection.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}{force}")
    finally:
        admin.dispose()


def server_error(admin_url: str) -> str | None:
    """None when the server answers; otherwise one line saying why not."""
    try:
        engine = create_engine(normalise_url(admin_url))
        with engine.connect():
            pass
        engine.dispose()
        return None
    except Exception as error:  # noqa: BLE001 - any reason means "not usable here"
        return f"{type(error).__name__}: {str(error).splitlines()[0]}"
