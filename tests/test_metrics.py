"""/metrics: valid Prometheus text, and counters that move under load."""

from __future__ import annotations

import threading

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from lockshop.cluster.client import ShopClient


def scrape(text: str) -> dict[tuple[str, tuple], float]:
    """Every sample, keyed by (name, sorted labels); parsing fails on invalid text."""
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_parse_and_count_orders_locks_and_retries(make_app, sqlite_url):
    app = make_app(sqlite_url, strategy="table")
    client = app.test_client()
    before = scrape(client.get("/metrics").get_data(as_text=True))
    for _ in range(3):
        assert client.post("/api/orders", json={"product_id": 1}).status_code == 201
    client.post("/api/orders", json={"product_id": 1, "quantity": 100})  # sold out
    response = client.get("/metrics")
    assert response.content_type == "text/plain; version=0.0.4; charset=utf-8"
    after = scrape(response.get_data(as_text=True))

    def moved(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("lockshop_orders_total", strategy="table", outcome="placed") == 3
    assert moved("lockshop_orders_total", strategy="table", outcome="sold_out") == 1
    assert moved("lockshop_lock_acquisitions_total", strategy="table") == 4
    assert moved("lockshop_lock_wait_seconds_count", strategy="table") == 4
    assert moved("lockshop_lock_hold_seconds_count", strategy="table") == 4
    assert moved("lockshop_lock_wait_seconds_bucket", strategy="table", le="+Inf") == 4


def test_transaction_strategies_record_lock_waits_and_retries(make_app, sqlite_url):
    app = make_app(sqlite_url, strategy="optimistic", business_delay_ms=20)
    client = app.test_client()
    before = scrape(client.get("/metrics").get_data(as_text=True))
    start = threading.Barrier(6)

    def buy():
        start.wait()
        # The test client is not thread-safe; each thread gets its own.
        assert app.test_client().post("/api/orders", json={"product_id": 1}).status_code == 201

    threads = [threading.Thread(target=buy) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    client.put("/api/admin/settings", json={"strategy": "for_update"})
    client.post("/api/orders", json={"product_id": 1})
    after = scrape(client.get("/metrics").get_data(as_text=True))
    retries = (value(after, "lockshop_optimistic_retries_total", strategy="optimistic")
               - value(before, "lockshop_optimistic_retries_total", strategy="optimistic"))
    audit = client.get("/api/admin/audit").json
    assert retries == audit["totals"]["retries"] > 0  # the metric agrees with the database
    assert value(after, "lockshop_lock_acquisitions_total", strategy="for_update") >= 1


@pytest.mark.cluster
def test_counters_move_on_every_instance_under_load(start_cluster):
    cluster = start_cluster(3)
    admin = ShopClient(cluster.urls[0])
    admin.reset([{"sku": "x", "stock": 1000}])
    admin.set_settings(strategy="local")
    before = [scrape(requests.get(f"{u}/metrics", timeout=10).text) for u in cluster.urls]
    with requests.Session() as http:
        for n in range(30):
            assert http.post(f"{cluster.urls[n % 3]}/api/orders", json={"product_id": 1},
                             timeout=10).status_code == 201
    for url, earlier in zip(cluster.urls, before, strict=True):
        later = scrape(requests.get(f"{url}/metrics", timeout=10).text)
        placed = (value(later, "lockshop_orders_total", strategy="local", outcome="placed")
                  - value(earlier, "lockshop_orders_total", strategy="local", outcome="placed"))
        assert placed == 10
        assert value(later, "lockshop_lock_acquisitions_total", strategy="local") >= 10
