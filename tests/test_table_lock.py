"""The lock table: leases, takeover after a crash, fencing tokens, and the shop's fencing."""

from __future__ import annotations

import os
import signal
import threading

import pytest
import requests

import locks
from helpers import in_its_business_delay, wait_for
from locks import LockLost
from locks.table_lock import TableLock
from lockshop.cluster.client import ShopClient
from shop.errors import StaleWriteRejected
from shop.orders.order_path import OrderContext, OrderRequest, place_order
from shop.store.audit import take_audit
from shop.store.db import engine_of
from shop.store.models import ProductKind
from shop.store.products import ProductSpec, reset_products


@pytest.fixture
def table_factory(open_lock_factory, database_url):
    return open_lock_factory("table", database_url=database_url, lease_ms=300)


def lease_ran_out(factory, name: str):
    """A condition to wait for: ``name``'s row is held, and its lease is over."""
    return lambda: [h for h in factory.look(name).holders if h["expires_in_ms"] <= 0]


def test_an_expired_lease_is_taken_over_and_the_old_holder_learns_it(table_factory):
    first = table_factory.lock("takeover")
    assert first.acquire()
    second = table_factory.lock("takeover")
    assert not second.acquire(blocking=False)
    wait_for(lease_ran_out(table_factory, "takeover"))  # the crashed-holder case
    assert second.acquire(blocking=False)
    with pytest.raises(LockLost):
        first.ensure_held()
    with pytest.raises(LockLost):
        first.release()  # must not delete the new holder's row
    second.ensure_held()
    second.release()


def test_a_database_error_in_any_step_is_backend_unavailable(table_factory):
    """Acquire, the check before commit, and release all say BackendUnavailable (a 503),
    never a raw database error: here the lock table is gone under a holder's feet."""
    lock = table_factory.lock("vanishing")
    assert lock.acquire()
    with table_factory.engine.begin() as db:
        db.exec_driver_sql("DROP TABLE lockshop_locks")
    with pytest.raises(locks.BackendUnavailable, match="database unavailable"):
        lock.ensure_held()
    with pytest.raises(locks.BackendUnavailable):
        lock.release()
    with pytest.raises(locks.BackendUnavailable):
        table_factory.lock("vanishing").acquire(blocking=False)


def test_fencing_tokens_grow_with_every_acquisition(table_factory):
    tokens = []
    for _ in range(3):
        with table_factory.lock("tokens") as lock:
            tokens.append(lock.fencing_token)
    assert tokens == sorted(tokens) and len(set(tokens)) == 3


class UnfencedTableLock(TableLock):
    """The same lock as a naive client uses it: no token, and no look at the lease.

    The shop has two defences against a holder whose lease ran out: the token
    (checked inside the write) and ``ensure_held()`` just before commit. The
    second leaves a window between the check and the commit, which only the
    first closes; this control turns both off to show what they prevent.
    """

    @property
    def fencing_token(self):
        return None

    def _still_held(self) -> bool:
        return True


#: The race's lease: long enough for the second buyer's whole order on a loaded machine
#: (at 300 ms, a busy one ran past it and lost its own lock before the commit).
RACE_LEASE_MS = 1500


@pytest.fixture
def race_factory(open_lock_factory, database_url):
    return open_lock_factory("table", database_url=database_url, lease_ms=RACE_LEASE_MS)


class UnfencedFactory:
    def __init__(self, factory):
        self.factory = factory

    def lock(self, name, *, timeout=5.0):
        return UnfencedTableLock(name, engine=self.factory.engine, lease_ms=RACE_LEASE_MS,
                                 strategy="table", timeout=timeout)


def paused_holder_race(sessions, race_factory, guard) -> list[str]:
    """A holder pauses past its lease; a second buyer takes over and writes first.

    The first holder's business delay (up to 20 leases) ends when the second
    buyer is done, so the order is the same on a machine of any speed. The lease
    is read from the row the lock keeps in ``race_factory``'s table.
    """
    reset_products(sessions, (ProductSpec("x", "x", ProductKind.ITEM, stock=10),))
    outcomes: list[str] = []
    second_is_done = threading.Event()

    def buy(who: str, delay_ms: int) -> None:
        try:
            place_order(engine_of(sessions), guard, OrderRequest(1),
                        OrderContext("test", "table", delay_ms, lock_timeout_ms=5000),
                        sleep=second_is_done.wait)  # a delay cut short by the second
            outcomes.append(f"{who} sold")
        except StaleWriteRejected:
            outcomes.append(f"{who}'s stale write rejected")

    paused = threading.Thread(target=buy, args=("paused", RACE_LEASE_MS * 20))
    paused.start()
    wait_for(lease_ran_out(race_factory, "product:1"), message="the paused holder's lease to end")
    buy("second", 0)
    second_is_done.set()
    paused.join()
    return outcomes


def test_fencing_rejects_the_paused_holders_write(sessions, race_factory):
    outcomes = paused_holder_race(sessions, race_factory, race_factory)
    assert sorted(outcomes) == ["paused's stale write rejected", "second sold"]
    product = take_audit(sessions).products[0]
    assert (product.sold, product.remaining, product.stale_writes_rejected) == (1, 9, 1)
    assert product.correct


def test_without_fencing_the_paused_holder_overwrites(sessions, race_factory):
    # The negative control: same pause, no token, and a sale's decrement is lost.
    outcomes = paused_holder_race(sessions, race_factory, UnfencedFactory(race_factory))
    assert sorted(outcomes) == ["paused sold", "second sold"]
    product = take_audit(sessions).products[0]
    assert (product.sold, product.remaining, product.lost_updates) == (2, 9, 1)
    assert not product.correct


@pytest.mark.cluster
def test_a_killed_holders_lock_is_taken_over_once_its_lease_expires(start_cluster, database_url):
    cluster = start_cluster(2, database_url, lock_lease_ms=2000, lock_timeout_ms=300)
    admin = ShopClient(cluster.urls[0])
    admin.reset([{"sku": "hot", "stock": 5}])
    admin.set_settings(strategy="table", business_delay_ms=10_000)

    def doomed_order():
        try:
            requests.post(f"{cluster.urls[0]}/api/orders", json={"product_id": 1}, timeout=30)
        except requests.RequestException:
            pass  # its instance is about to be killed

    holder = threading.Thread(target=doomed_order)
    holder.start()
    in_its_business_delay(cluster, 0)  # inside its critical section, holding the lock
    os.killpg(cluster.instances[0].process.pid, signal.SIGKILL)
    holder.join()

    admin = ShopClient(cluster.urls[1])
    admin.set_settings(business_delay_ms=0)
    blocked = requests.post(f"{cluster.urls[1]}/api/orders", json={"product_id": 1}, timeout=30)
    assert blocked.status_code == 503 and blocked.json()["error"] == "lock_timeout"
    assert blocked.headers["Retry-After"] == "1"

    def sold() -> bool:
        answer = requests.post(f"{cluster.urls[1]}/api/orders", json={"product_id": 1}, timeout=30)
        assert answer.status_code in (201, 503), answer.text
        return answer.status_code == 201

    wait_for(sold, timeout=15, interval=0.2,
             message="the killed holder's 2 s lease to expire and the lock to be taken over")
    audit = admin.audit()
    assert audit["correct"] and audit["totals"]["sold"] == 1  # the killed order wrote nothing
