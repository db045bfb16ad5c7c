"""``lockshop bench shop``'s instruments: the load client counts what the shop answered,
and the targets are judged from the run's own figures.

Only what the instruments see is asserted, never how fast anything is.
"""

from __future__ import annotations

import pytest

from lockshop.bench.http_load import Call, one_at_a_time, run_load
from lockshop.bench.shop import FLOOR, ShopFigures, judge
from lockshop.cluster.client import ShopClient

pytestmark = pytest.mark.cluster


def test_the_load_counts_each_answer_by_status_and_orders_are_real(start_cluster):
    cluster = start_cluster(2, strategy="atomic")
    admin = ShopClient(cluster.urls[0])
    admin.reset([{"sku": "x", "stock": 1_000_000}])
    orders = run_load(cluster.urls, Call("POST", "/api/orders", {"product_id": 1}),
                      connections=4, seconds=1.0, warm_up_s=0.2)
    missing = run_load(cluster.urls, Call("POST", "/api/orders", {"product_id": 99}),
                       connections=2, seconds=0.5, warm_up_s=0)
    audit = admin.audit()
    assert set(orders.statuses) == {201} and orders.answers > 0
    # Answers during the warm-up are not counted, so the shop sold at least as many.
    assert audit["totals"]["orders"] >= orders.answers
    assert audit["correct"]
    assert set(missing.statuses) == {404} and missing.answers > 0
    assert len(orders.latencies) == orders.answers


def test_one_at_a_time_is_one_request_after_another(start_cluster):
    cluster = start_cluster(1)
    alone = one_at_a_time(cluster.urls[0], Call("GET", "/api/health"), seconds=0.5)
    assert set(alone.statuses) == {200}
    # One connection, so each request was sent after the one before was answered. Every
    # request was sent inside the run, so all but the last were answered inside it too: only
    # the last may end after the run does, however slow it was.
    assert len(alone.latencies) > 1
    assert sum(alone.latencies[:-1]) <= alone.seconds


def figures(*, floor_per_s: float, floor_ms: float, atomic_per_s: float, atomic_ms: float,
            redis_ms: float) -> list[ShopFigures]:
    return [ShopFigures(FLOOR, floor_ms, floor_per_s, floor_per_s, 0, None),
            ShopFigures("atomic", atomic_ms, atomic_per_s, atomic_per_s, 0, True),
            ShopFigures("redis", redis_ms, 100.0, 100.0, 0, True)]


def test_the_targets_are_judged_from_the_run_itself():
    met = judge(figures(floor_per_s=1000, floor_ms=0.5, atomic_per_s=600, atomic_ms=1.2,
                        redis_ms=2.0))
    assert [v["met"] for v in met] == [True, True, True]
    assert [v["measured"] for v in met] == [0.6, 2.4, 0.8]
    missed = judge(figures(floor_per_s=1000, floor_ms=0.5, atomic_per_s=300, atomic_ms=1.5,
                           redis_ms=2.6))
    assert [v["met"] for v in missed] == [False, False, False]


def test_a_target_without_its_strategy_is_not_measured():
    floor_only = [ShopFigures(FLOOR, 0.5, 1000, 1000, 0, None)]
    assert [v["met"] for v in judge(floor_only)] == [None, None, None]
