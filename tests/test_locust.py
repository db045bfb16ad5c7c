"""The flash-sale locustfile, run headless: its exit code follows the shop's audit."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest
from sqlalchemy import func, select

from loadtest import locustfile_path
from loadtest.runner import run_locust
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from shop.config import Config
from shop.store.db import make_engine
from shop.store.models import Order, OrderKey

pytestmark = [pytest.mark.cluster, pytest.mark.locust]

SMALL_CATALOGUE = [{"sku": "a", "stock": 30}, {"sku": "t", "kind": "ticket", "seats": 10}]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    runtime = tmp_path_factory.mktemp("locust")
    config = Config(database_url=f"sqlite:///{runtime / 'shop.db'}", admin_token="s3cret")
    with Cluster(config, instances=3, runtime_dir=runtime) as cluster:
        yield cluster


def audit_failures(csv_prefix) -> list[dict]:
    with open(f"{csv_prefix}_failures.csv", newline="") as failures:
        return [row for row in csv.DictReader(failures) if row["Method"] == "AUDIT"]


def sale(cluster, tmp_path, strategy: str, instances: int):
    admin = ShopClient(cluster.urls[0], "s3cret")
    admin.reset(SMALL_CATALOGUE)
    admin.set_settings(strategy=strategy, business_delay_ms=30)
    return run_locust(cluster.urls[:instances], users=12, run_time_s=4, admin_token="s3cret",
                      csv_prefix=tmp_path / strategy), admin.audit()


def test_an_overselling_run_fails(cluster, tmp_path):
    result, audit = sale(cluster, tmp_path, "none", instances=3)
    assert audit["correct"] is False
    assert result.exit_code == 1, result.output
    assert len(audit_failures(result.csv_prefix)) == 1
    assert "NOT correct" in audit_failures(result.csv_prefix)[0]["Error"]


def test_a_correct_run_passes(cluster, tmp_path):
    result, audit = sale(cluster, tmp_path, "local", instances=1)
    assert audit["correct"] is True
    assert result.requests > 50
    assert audit_failures(result.csv_prefix) == []
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("strategy,instances,correct", [("none", 3, False), ("local", 1, True)])
def test_a_distributed_run_reads_the_audit_once_on_the_master(cluster, tmp_path, strategy,
                                                               instances, correct):
    admin = ShopClient(cluster.urls[0], "s3cret")
    admin.reset(SMALL_CATALOGUE)
    admin.set_settings(strategy=strategy, business_delay_ms=30)
    result = run_locust(cluster.urls[:instances], users=12, run_time_s=4, admin_token="s3cret",
                        csv_prefix=tmp_path / strategy, workers=2)
    assert admin.audit()["correct"] is correct
    assert result.requests > 50  # the workers did the shopping
    failures = audit_failures(result.csv_prefix)
    if correct:
        assert failures == [] and result.exit_code == 0, result.output
    else:
        assert len(failures) == 1 and result.exit_code == 1, result.output
        assert failures[0]["Occurrences"] == "1"  # read once, on the master


def test_locusts_processes_shortcut_reads_the_audit_once(cluster, tmp_path):
    admin = ShopClient(cluster.urls[0], "s3cret")
    admin.reset(SMALL_CATALOGUE)
    admin.set_settings(strategy="none", business_delay_ms=30)
    result = run_locust(cluster.urls, users=8, run_time_s=3, admin_token="s3cret",
                        csv_prefix=tmp_path / "processes", extra_args=("--processes", "2"))
    failures = audit_failures(result.csv_prefix)
    assert result.exit_code == 1 and len(failures) == 1 and failures[0]["Occurrences"] == "1"


@pytest.mark.parametrize("locustfile", ["flash_sale", "seat_sale", "slow_payers"])
def test_every_locustfile_places_orders(cluster, tmp_path, locustfile):
    """A sale that places nothing must not pass for a correct one (the audit of an
    empty sale is correct)."""
    admin = ShopClient(cluster.urls[0], "s3cret")
    admin.reset(SMALL_CATALOGUE)
    admin.set_settings(strategy="local", business_delay_ms=0)
    result = run_locust(cluster.urls[:1], locustfile=locustfile, users=4, run_time_s=3,
                        admin_token="s3cret", csv_prefix=tmp_path / locustfile)
    assert result.exit_code == 0, result.output
    assert admin.audit()["totals"]["orders"] > 0


def test_no_order_before_every_buyer_is_in_and_the_sale_closes_on_time(cluster, tmp_path):
    """Four buyers, spawned two a second: the first ones look at the products and wait
    at the doors. Locust's history (a row a second, per request name) shows no order
    while fewer than four were in, and orders after; --open-for ends the run two seconds
    after the doors opened, where --run-time would have gone on for ten minutes."""
    admin = ShopClient(cluster.urls[0], "s3cret")
    admin.reset(SMALL_CATALOGUE)
    admin.set_settings(strategy="local", business_delay_ms=0)
    prefix = tmp_path / "doors"
    done = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(locustfile_path("flash_sale")),
         "--headless", "--users", "4", "--spawn-rate", "2", "--open-for", "2",
         "--run-time", "600s", "--host", cluster.urls[0], "--targets", cluster.urls[0],
         "--admin-token", "s3cret", "--csv", str(prefix), "--csv-full-history",
         "--only-summary", "--loglevel", "WARNING"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(f"{prefix}_stats_history.csv", newline="") as history:
        rows = list(csv.DictReader(history))
    spawning = [r for r in rows if 0 < int(r["User Count"]) < 4]
    assert any(r["Name"] == "/api/products" for r in spawning)  # buyers were looking
    assert all(int(r["Total Request Count"]) == 0 for r in spawning
               if r["Name"].startswith("/api/orders"))
    assert admin.audit()["totals"]["orders"] > 0


def test_timed_out_orders_are_retried_with_their_key_and_never_bought_twice(cluster, tmp_path):
    """Every order sits 400 ms in its critical section and its buyer gives up after
    250 ms: most orders time out, and their retries (to any instance) find the order
    their key made, or make it. Without the key each retry could buy again."""
    admin = ShopClient(cluster.urls[0], "s3cret")
    admin.reset(SMALL_CATALOGUE)
    admin.set_settings(strategy="table", business_delay_ms=400)
    result = run_locust(cluster.urls, users=6, run_time_s=5, admin_token="s3cret",
                        csv_prefix=tmp_path / "retries",
                        extra_args=("--order-timeout", "0.25", "--order-retries", "3"))
    with open(f"{tmp_path / 'retries'}_stats.csv", newline="") as stats:
        retried = sum(int(row["Request Count"]) for row in csv.DictReader(stats)
                      if row["Name"].endswith("[retry]"))
    assert retried > 0, result.output
    audit = admin.audit()
    assert audit["correct"] is True, audit["totals"]
    assert audit["totals"]["orders"] > 0
    engine = make_engine(cluster.config.database_url)
    try:
        with engine.begin() as db:
            orders = db.scalar(select(func.count()).select_from(Order))
            keys = db.scalar(select(func.count()).select_from(OrderKey))
    finally:
        engine.dispose()
    assert orders == keys  # every order was made by one key, and one key made one order
