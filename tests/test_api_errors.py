"""Every bad request gets its 4xx, the one error shape, and changes nothing."""

from __future__ import annotations

import json
import random

import pytest

import locks
from helpers import send, snapshot
from shop.orders.order_path import lock_name

ITEM, OTHER_ITEM, TICKET = 1, 2, 3  # the default products' ids

BAD_ORDERS = [
    # (body as sent, status, error code)
    (b"not json", 400, "bad_request"),
    (b"[1, 2]", 400, "bad_request"),
    (b'"a string"', 400, "bad_request"),
    (b"", 400, "bad_request"),
    (b"{}", 400, "bad_request"),
    ({"quantity": 1}, 400, "bad_request"),
    ({"product_id": "1"}, 400, "bad_request"),
    ({"product_id": True}, 400, "bad_request"),
    ({"product_id": 1.5}, 400, "bad_request"),
    ({"product_id": None}, 400, "bad_request"),
    ({"product_id": 0}, 422, "unprocessable"),
    ({"product_id": -3}, 422, "unprocessable"),
    ({"product_id": 2**40}, 422, "unprocessable"),
    ({"product_id": 999}, 404, "not_found"),
    ({"product_id": ITEM, "quantity": 0}, 422, "unprocessable"),
    ({"product_id": ITEM, "quantity": -1}, 422, "unprocessable"),
    ({"product_id": ITEM, "quantity": 101}, 422, "unprocessable"),
    ({"product_id": ITEM, "quantity": "2"}, 400, "bad_request"),
    ({"product_id": ITEM, "quantity": 2, "colour": "red"}, 400, "bad_request"),
    ({"product_id": ITEM, "seat": "A1"}, 422, "unprocessable"),
    ({"product_id": TICKET, "quantity": 2}, 422, "unprocessable"),
    ({"product_id": TICKET, "seat": "Z99"}, 422, "unprocessable"),
    ({"product_id": TICKET, "seat": "A 1"}, 400, "bad_request"),
    ({"product_id": TICKET, "seat": 7}, 400, "bad_request"),
    ({"product_id": TICKET, "seat": "x" * 17}, 400, "bad_request"),
]


@pytest.mark.parametrize("body,status,code", BAD_ORDERS, ids=[repr(b[0])[:40] for b in BAD_ORDERS])
def test_bad_orders_are_refused_and_change_nothing(app, client, body, status, code):
    before = snapshot(app)
    response = send(client, "POST", "/api/orders", body)
    assert response.status_code == status, response.json
    assert response.json["error"] == code
    assert response.json["message"]
    assert snapshot(app) == before


def test_sold_out_is_409_and_changes_nothing(app, client):
    client.post("/api/admin/reset", json={"products": [{"sku": "rare", "stock": 1}]})
    assert client.post("/api/orders", json={"product_id": 1}).status_code == 201
    before = snapshot(app)
    response = client.post("/api/orders", json={"product_id": 1})
    assert response.status_code == 409
    assert response.json["error"] == "sold_out"
    assert response.json["remaining"] == 0
    assert snapshot(app) == before


def test_more_than_is_left_is_409(app, client):
    client.post("/api/admin/reset", json={"products": [{"sku": "few", "stock": 3}]})
    before = snapshot(app)
    response = client.post("/api/orders", json={"product_id": 1, "quantity": 4})
    assert response.status_code == 409 and response.json["remaining"] == 3
    assert snapshot(app) == before


def test_a_taken_seat_is_409_and_changes_nothing(app, client):
    assert client.post("/api/orders", json={"product_id": TICKET, "seat": "B2"}).status_code == 201
    before = snapshot(app)
    response = client.post("/api/orders", json={"product_id": TICKET, "seat": "B2"})
    assert response.status_code == 409
    assert response.json["error"] == "seat_taken"
    assert snapshot(app) == before


def test_no_free_seat_is_409(app, client):
    client.post("/api/admin/reset", json={"products": [{"sku": "tiny", "kind": "ticket",
                                                        "seats": ["A1"]}]})
    assert client.post("/api/orders", json={"product_id": 1}).json["seat"] == "A1"
    before = snapshot(app)
    assert client.post("/api/orders", json={"product_id": 1}).status_code == 409
    assert snapshot(app) == before


def test_lock_timeout_is_503_with_retry_after_and_changes_nothing(make_app, sqlite_url):
    app = make_app(sqlite_url, strategy="local", lock_timeout_ms=100)
    client = app.test_client()
    before = snapshot(app)
    # The test client runs in this process, so holding the in-process lock
    # here is exactly what a slow concurrent order would do.
    holder = locks.open_factory("local").lock(lock_name(ITEM))
    assert holder.acquire()
    try:
        response = client.post("/api/orders", json={"product_id": ITEM})
    finally:
        holder.release()
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    assert response.json["error"] == "lock_timeout"
    assert snapshot(app) == before
    assert client.post("/api/orders", json={"product_id": ITEM}).status_code == 201


@pytest.mark.parametrize("method,path,status", [
    ("GET", "/api/orders/999", 404),
    ("GET", "/api/orders/99999999999999", 404),
    ("POST", "/api/orders/999/pay", 404),
    ("GET", "/api/products/999", 404),
    ("GET", "/api/products/0", 404),
    ("GET", "/api/products/abc", 404),
    ("GET", "/api/no-such-thing", 404),
    ("DELETE", "/api/orders", 405),
    ("PUT", "/api/products", 405),
])
def test_unknown_things_and_wrong_methods(app, client, method, path, status):
    before = snapshot(app)
    response = client.open(path, method=method)
    assert response.status_code == status
    assert set(response.json) >= {"error", "message"}
    assert snapshot(app) == before


def test_paying_twice_is_409_and_changes_nothing(app, client):
    order = client.post("/api/orders", json={"product_id": ITEM}).json
    assert client.post(f"/api/orders/{order['id']}/pay").json["status"] == "paid"
    before = snapshot(app)
    response = client.post(f"/api/orders/{order['id']}/pay")
    assert response.status_code == 409
    assert response.json == {"error": "order_not_pending", "status": "paid",
                             "message": f"order {order['id']} is paid, not pending"}
    assert snapshot(app) == before


BAD_SETTINGS = [
    ({"strategy": "no-such-lock"}, 422),
    ({"strategy": 3}, 400),
    ({"business_delay_ms": -1}, 422),
    ({"business_delay_ms": 10_001}, 422),
    ({"business_delay_ms": "10"}, 400),
    ({}, 400),
    ({"strategy": "local", "colour": "red"}, 400),
    (b"nope", 400),
]


@pytest.mark.parametrize("body,status", BAD_SETTINGS, ids=[repr(b[0])[:40] for b in BAD_SETTINGS])
def test_bad_settings_are_refused_and_change_nothing(app, client, body, status):
    before = snapshot(app)
    response = send(client, "PUT", "/api/admin/settings", body)
    assert response.status_code == status
    assert response.json["message"]
    assert snapshot(app) == before


def test_unknown_strategy_answer_lists_the_known_ones(client):
    response = client.put("/api/admin/settings", json={"strategy": "no-such-lock"})
    assert set(locks.names()) <= set(response.json["known"])


BAD_RESETS = [
    ({"products": "all"}, 400),
    ({"products": []}, 422),
    ({"products": [{"stock": 5}]}, 400),
    ({"products": [{"sku": "a", "stock": -1}]}, 422),
    ({"products": [{"sku": "a", "stock": True}]}, 400),
    ({"products": [{"sku": "a", "kind": "car"}]}, 422),
    ({"products": [{"sku": "a", "kind": "ticket", "stock": 5}]}, 422),
    ({"products": [{"sku": "a", "seats": 5}]}, 422),
    ({"products": [{"sku": "a", "kind": "ticket", "seats": 0}]}, 422),
    ({"products": [{"sku": "a", "kind": "ticket", "seats": ["A1", "A1"]}]}, 422),
    ({"products": [{"sku": "a"}, {"sku": "a"}]}, 422),
    ({"products": [{"sku": "a b"}]}, 400),
    ({"products": [{"sku": "a", "price": 3}]}, 400),
    ({"catalogue": []}, 400),
    (b"[]", 400),
]


@pytest.mark.parametrize("body,status", BAD_RESETS, ids=[repr(b[0])[:40] for b in BAD_RESETS])
def test_bad_resets_are_refused_and_change_nothing(app, client, body, status):
    client.post("/api/orders", json={"product_id": ITEM})  # something a reset would delete
    before = snapshot(app)
    response = send(client, "POST", "/api/admin/reset", body)
    assert response.status_code == status, response.json
    assert snapshot(app) == before


def test_a_body_over_the_limit_is_413(app, client):
    before = snapshot(app)
    response = client.post("/api/orders", data=b"{" + b" " * (2 * 1024 * 1024) + b"}",
                           content_type="application/json")
    assert response.status_code == 413
    assert snapshot(app) == before


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"},
                                     {"Authorization": "Basic c2VjcmV0"},
                                     {"X-Admin-Token": "secre"}])
def test_admin_needs_the_token_when_one_is_configured(make_app, sqlite_url, headers):
    app = make_app(sqlite_url, admin_token="secret")
    client = app.test_client()
    before = snapshot(app)
    for method, path, body in [("POST", "/api/admin/reset", {}),
                               ("PUT", "/api/admin/settings", {"strategy": "local"}),
                               ("GET", "/api/admin/audit", None),
                               ("GET", "/api/admin/settings", None)]:
        response = client.open(path, method=method, json=body, headers=headers)
        assert response.status_code == 401, path
        assert response.json["error"] == "unauthorized"
    assert snapshot(app) == before
    ok = client.get("/api/admin/audit", headers={"Authorization": "Bearer secret"})
    assert ok.status_code == 200
    assert client.get("/api/admin/audit", headers={"X-Admin-Token": "secret"}).status_code == 200


def test_every_answer_says_which_instance_served_it(client):
    for path in ["/api/products", "/api/orders/999", "/", "/api/nothing"]:
        assert client.get(path).headers["X-Lockshop-Instance"] == "test"


def test_random_garbage_never_gets_a_500(app, client):
    # A seeded fuzz over shapes a careless client might send.
    rng = random.Random(20261122)
    values = [None, True, False, 0, 1, -1, 3, 2**31, 2**63, 1.5, "", "1", "A1", "B7", [], {},
              [1], {"a": 1}, "x" * 300]
    keys = ["product_id", "quantity", "seat", "extra"]
    for _ in range(300):
        body = {k: rng.choice(values) for k in rng.sample(keys, rng.randint(0, 4))}
        raw = json.dumps(body) if rng.random() < 0.9 else json.dumps(body)[: rng.randint(0, 10)]
        response = client.post("/api/orders", data=raw, content_type="application/json")
        assert response.status_code in {201, 400, 404, 409, 422}, (raw, response.json)


def test_a_stocktake_of_an_unknown_product_is_404(client):
    answer = client.get("/api/products/999/stocktake")
    assert answer.status_code == 404 and answer.json["error"] == "not_found"


@pytest.mark.parametrize(("body", "status"), [
    ({"job_interval_ms": -1}, 422),
    ({"job_interval_ms": "soon"}, 400),
    ({"job_guard": "boss"}, 422),
    ({"job_guard": "leader"}, 422),  # no ZooKeeper configured for this app
    ({"unpaid_expiry_ms": 86_400_001}, 422),
])
def test_bad_job_settings_are_refused_and_change_nothing(client, body, status):
    before = client.get("/api/admin/settings").json
    answer = client.put("/api/admin/settings", json=body)
    assert answer.status_code == status, answer.json
    assert answer.json["error"] and answer.json["message"]
    assert client.get("/api/admin/settings").json == before
