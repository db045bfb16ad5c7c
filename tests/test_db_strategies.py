"""The database's own strategies, on SQLite, PostgreSQL and MariaDB.

Same race as tests/test_order_path.py (a barrier, a business delay far
longer than a query): ``none`` is shown there to oversell under exactly
this load, and each strategy here must not.
"""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import select, text

from helpers import concurrent_sale, runner_for
from locks import Backends, LockNotAcquired
from shop.errors import Unprocessable
from shop.orders.order_path import OrderContext, OrderRequest
from shop.orders.order_strategies import Strategies
from shop.store.audit import take_audit
from shop.store.db import backend_name, engine_of
from shop.store.models import ProductKind, Seat
from shop.store.products import ProductSpec, reset_products

STRATEGIES = ["for_update", "pg_advisory", "optimistic", "atomic"]
BUYERS = 12
STOCK = 5
DATABASES = {"sqlite": (), "postgres": (pytest.mark.postgres,), "mysql": (pytest.mark.mysql,)}


def cases(names: list[str]) -> list:
    """(database, strategy) pairs that can run: pg_advisory only on PostgreSQL."""
    return [pytest.param(db, name, marks=marks, id=f"{db}-{name}")
            for db, marks in DATABASES.items() for name in names
            if name != "pg_advisory" or db == "postgres"]


def sale(sessions, name: str, requests: list[OrderRequest], delay_ms: int = 50) -> dict:
    return concurrent_sale(sessions, name, requests, delay_ms)


@pytest.mark.parametrize("database_url,name", cases(STRATEGIES), indirect=["database_url"])
def test_items_are_never_oversold(sessions, database_url, name):
    reset_products(sessions, (ProductSpec("x", "x", ProductKind.ITEM, stock=STOCK),))
    outcome = sale(sessions, name, [OrderRequest(1)] * BUYERS)
    audit = take_audit(sessions)
    assert outcome == {"ok": STOCK, "refused": BUYERS - STOCK}
    assert audit.correct, audit
    assert audit.products[0].remaining == 0


@pytest.mark.parametrize("database_url,name", cases(STRATEGIES), indirect=["database_url"])
def test_seats_are_never_double_booked(sessions, database_url, name):
    reset_products(sessions, (ProductSpec("t", "t", ProductKind.TICKET,
                                           seats=("A1", "A2", "A3")),))
    requests = [OrderRequest(1)] * 6 + [OrderRequest(1, seat="A2")] * 3
    outcome = sale(sessions, name, requests)
    audit = take_audit(sessions)
    assert outcome["ok"] == 3
    assert audit.correct, audit
    with sessions.begin() as session:  # every seat taken, by exactly the order that holds it
        holders = session.execute(select(Seat.label, Seat.order_id)).all()
    assert all(order_id is not None for _, order_id in holders)


def test_optimistic_retries_are_counted(sessions, database_url):
    reset_products(sessions, (ProductSpec("x", "x", ProductKind.ITEM, stock=100),))
    buyers = 8
    runner = runner_for(sessions, "optimistic")
    context = OrderContext("test", "optimistic", business_delay_ms=20, lock_timeout_ms=30_000)
    # Each buyer's first sleep is its first business delay: it waits there until all
    # eight have read version 0 (on a busy machine a start barrier alone let some read 1).
    every_one_read, first = threading.Barrier(buyers), threading.local()

    def sleep(seconds: float) -> None:
        if not getattr(first, "done", False):
            first.done = True
            every_one_read.wait(timeout=30)
        time.sleep(seconds)  # the delay and back-off the order path asks for: time is its point

    threads = [threading.Thread(target=runner, args=(engine_of(sessions), OrderRequest(1),
                                                     context), kwargs={"sleep": sleep})
               for _ in range(buyers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    product = take_audit(sessions).products[0]
    assert product.sold == buyers and product.correct
    # Eight buyers read version 0 together; only one write can match it.
    assert product.retries >= buyers - 1


@pytest.mark.parametrize("database", ["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def test_advisory_lock_refuses_other_databases(request, database):
    url = request.getfixturevalue(f"{database}_url")
    strategies = Strategies(Backends(), backend_name(url))
    with pytest.raises(Unprocessable, match="needs postgresql; this shop runs on"):
        strategies.runner("pg_advisory")


def test_advisory_lock_cannot_be_switched_on_over_sqlite(client):
    response = client.put("/api/admin/settings", json={"strategy": "pg_advisory"})
    assert response.status_code == 422
    assert response.json["requires"] == ["postgresql"]
    listed = {s["name"]: s for s in client.get("/api/strategies").json["strategies"]}
    assert listed["pg_advisory"]["available"] is False
    assert listed["for_update"]["available"] is True


@pytest.mark.parametrize("database_url,name", cases(["for_update", "pg_advisory"]),
                         indirect=["database_url"])
def test_a_held_row_or_advisory_lock_gives_503_and_changes_nothing(sessions, database_url, name):
    runner = runner_for(sessions, name)
    reset_products(sessions, (ProductSpec("x", "x", ProductKind.ITEM, stock=STOCK),))
    context = OrderContext("test", name, business_delay_ms=0, lock_timeout_ms=300)
    dialect = backend_name(database_url)
    holder = sessions()
    try:
        # Someone else holds the lock, in an open transaction.
        if dialect == "sqlite":
            holder.connection(execution_options={"sqlite_begin": "IMMEDIATE"})
        elif name == "pg_advisory":
            holder.execute(text("SELECT pg_advisory_xact_lock(:c, 1)"), {"c": 0x4C53})
        else:
            holder.execute(text("SELECT stock FROM products WHERE id = 1 FOR UPDATE"))
        with pytest.raises(LockNotAcquired):
            runner(engine_of(sessions), OrderRequest(1), context)
    finally:
        holder.rollback()
        holder.close()
    assert take_audit(sessions).products[0].sold == 0
    runner(engine_of(sessions), OrderRequest(1), context)
    assert take_audit(sessions).products[0].sold == 1
