"""Idempotent orders: one ``Idempotency-Key``, at most one order.

A retry must find the order its key made, whichever instance takes it and
whichever strategy is in force, even one that oversells; the same key with
another body is a client's bug (422); a key is forgotten after its keeping
time. Each concurrent test also runs without keys, to show that the same
attempts then do make several orders: the key is what prevents them.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import requests
from sqlalchemy import select, update

from helpers import runner_for, snapshot
from shop.errors import SoldOut
from shop.orders.idempotency import KEEP_KEYS, place_once
from shop.orders.order_path import OrderContext, OrderRequest
from shop.store.audit import take_audit
from shop.store.db import engine_of
from shop.store.models import OrderKey, ProductKind, utcnow
from shop.store.products import ProductSpec, reset_products


def order(client, body: dict, key: str | None):
    return client.post("/api/orders", json=body,
                       headers={"Idempotency-Key": key} if key is not None else {})


def test_a_retry_with_its_key_gets_the_first_order(client):
    first = order(client, {"product_id": 1, "quantity": 2}, "buyer-7-order-1")
    again = order(client, {"product_id": 1, "quantity": 2}, "buyer-7-order-1")
    assert first.status_code == again.status_code == 201
    assert again.json["id"] == first.json["id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert again.headers["Location"] == first.headers["Location"]
    other = order(client, {"product_id": 1, "quantity": 2}, "buyer-7-order-2")
    assert other.json["id"] != first.json["id"]
    assert len(snapshot(client.application)["orders"]) == 2


def test_the_same_key_for_another_order_is_refused_and_changes_nothing(client):
    order(client, {"product_id": 1}, "k1")
    before = snapshot(client.application)
    for body in ({"product_id": 1, "quantity": 2}, {"product_id": 2}):
        answer = order(client, body, "k1")
        assert answer.status_code == 422
        assert answer.json["error"] == "idempotency_key_reused"
        assert "k1" in answer.json["message"]
    assert snapshot(client.application) == before


@pytest.mark.parametrize("key", ["", "a b", "é", "x" * 256, "tab\there"])
def test_a_malformed_key_is_a_400_and_changes_nothing(client, key):
    before = snapshot(client.application)
    answer = order(client, {"product_id": 1}, key)
    assert answer.status_code == 400, answer.json
    assert "Idempotency-Key" in answer.json["message"]
    assert snapshot(client.application) == before


def test_a_key_is_forgotten_after_its_keeping_time(client):
    first = order(client, {"product_id": 1}, "old-key").json
    with client.application.extensions["lockshop"].sessions.begin() as session:
        session.execute(update(OrderKey).values(
            created_at=utcnow() - KEEP_KEYS - timedelta(seconds=1)))
    again = order(client, {"product_id": 1}, "old-key")
    assert again.status_code == 201 and again.json["id"] != first["id"]
    assert "Idempotent-Replayed" not in again.headers


def test_a_refused_order_leaves_no_key(client):
    sold_out = order(client, {"product_id": 2, "quantity": 51}, "too-many")  # 50 mugs
    assert sold_out.status_code == 409
    with client.application.extensions["lockshop"].sessions.begin() as session:
        assert session.scalars(select(OrderKey)).all() == []
    assert order(client, {"product_id": 2, "quantity": 50}, "too-many").status_code == 201


# --- concurrent attempts of one order ------------------------------------------------

ATTEMPTS = 8


def attempts_at_once(sessions, strategy: str, keys: list[str | None]) -> list[int]:
    """Every attempt starts together (a barrier) and sits in a 150 ms business delay, so
    their read-check-writes overlap; the ids of the orders they were answered with."""
    runner = runner_for(sessions, strategy)
    database = engine_of(sessions)
    context = OrderContext("test", strategy, business_delay_ms=150, lock_timeout_ms=30_000)
    start = threading.Barrier(len(keys))
    answers: list[int] = []

    def attempt(key: str | None) -> None:
        request = OrderRequest(1, key=key)
        start.wait()
        try:
            answers.append(place_once(lambda r: runner(database, r, context), database,
                                      request).order.id)
        except SoldOut:
            answers.append(0)

    threads = [threading.Thread(target=attempt, args=(key,)) for key in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


@pytest.mark.parametrize("strategy", ["none", "local", "atomic", "optimistic", "for_update"])
def test_concurrent_retries_with_one_key_make_one_order(sessions, strategy):
    reset_products(sessions, (ProductSpec("x", "x", ProductKind.ITEM, stock=100),))
    answers = attempts_at_once(sessions, strategy, ["the-one-order"] * ATTEMPTS)
    assert len(set(answers)) == 1 and answers[0] > 0, answers
    audit = take_audit(sessions).products[0]
    assert audit.orders == 1 and audit.sold == 1
    assert audit.remaining == 99  # the losers' stock writes rolled back with their key


def test_the_same_attempts_without_a_key_make_as_many_orders(sessions):
    reset_products(sessions, (ProductSpec("x", "x", ProductKind.ITEM, stock=100),))
    answers = attempts_at_once(sessions, "atomic", [None] * ATTEMPTS)
    assert len(set(answers)) == ATTEMPTS
    assert take_audit(sessions).products[0].orders == ATTEMPTS


def test_a_retry_refused_for_the_last_unit_gets_the_order_its_key_made(sessions):
    """The retry waits behind the first attempt's lock, then finds the stock gone: its
    refusal must not be the answer, since its first attempt bought that last unit."""
    reset_products(sessions, (ProductSpec("x", "x", ProductKind.ITEM, stock=1),))
    answers = attempts_at_once(sessions, "local", ["last-unit"] * 3)
    assert len(set(answers)) == 1 and answers[0] > 0, answers


# --- a timed-out order, retried on another instance ----------------------------------

@pytest.mark.parametrize("strategy", ["none", "table"])
def test_a_timed_out_order_retried_on_another_instance_is_not_sold_twice(
        start_cluster, strategy):
    """The buyer gives up on instance 0 while its order sits in the business delay, then
    retries on instance 1: without a key that is two orders; with one, one."""
    cluster = start_cluster(2, business_delay_ms=600)
    admin = requests.Session()
    outcomes = {}
    for key in (None, "buyer-1-order-1"):
        admin.post(f"{cluster.urls[0]}/api/admin/reset", json={}, timeout=30).raise_for_status()
        admin.put(f"{cluster.urls[0]}/api/admin/settings", json={"strategy": strategy},
                  timeout=30).raise_for_status()
        headers = {"Idempotency-Key": key} if key else {}
        with pytest.raises(requests.Timeout):
            requests.post(f"{cluster.urls[0]}/api/orders", json={"product_id": 1},
                          headers=headers, timeout=0.2)
        retry = requests.post(f"{cluster.urls[1]}/api/orders", json={"product_id": 1},
                              headers=headers, timeout=30)
        assert retry.status_code == 201, retry.text
        audit = admin.get(f"{cluster.urls[0]}/api/admin/audit", timeout=30).json()
        outcomes[key is not None] = (audit["products"][0]["orders"],
                                     retry.headers.get("Idempotent-Replayed"))
    assert outcomes == {False: (2, None), True: (1, "true")}
