"""Real instances, separate processes, one database: where in-process locks stop working.

Every buyer is released at once by a barrier, and the business delay (far
longer than a request's own work) keeps each critical section open long
enough that sections on different instances must overlap.
"""

from __future__ import annotations

import pytest
import requests

from helpers import FLASH_SALE_STOCK as STOCK
from helpers import flash_sale
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from shop.config import Config

pytestmark = pytest.mark.cluster



@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    runtime = tmp_path_factory.mktemp("cluster")
    with Cluster(Config(database_url=f"sqlite:///{runtime / 'shop.db'}"), instances=3,
                 runtime_dir=runtime) as cluster:
        yield cluster


@pytest.mark.parametrize("strategy", ["none", "local"])
def test_oversells_across_instances(cluster, strategy):
    # For "local", each instance serialises its own buyers, but the three
    # instances' critical sections run side by side.
    audit, served_by = flash_sale(cluster, strategy, instances=3)
    assert len(served_by) == 3
    product = audit["products"][0]
    assert product["oversold"] > 0
    assert product["lost_updates"] > 0
    assert audit["correct"] is False


def test_local_lock_is_correct_on_one_instance(cluster):
    audit, served_by = flash_sale(cluster, "local", instances=1)
    assert list(served_by) == ["shop-1"]
    product = audit["products"][0]
    assert (product["sold"], product["remaining"]) == (STOCK, 0)
    assert audit["correct"] is True, audit


def test_switching_the_strategy_once_switches_every_instance(cluster):
    ShopClient(cluster.urls[0]).set_settings(strategy="local", business_delay_ms=0)
    for url in cluster.urls:
        assert requests.get(f"{url}/api/strategies", timeout=10).json()["current"] == "local"
    ShopClient(cluster.urls[2]).set_settings(strategy="none")
    for url in cluster.urls:
        assert requests.get(f"{url}/api/strategies", timeout=10).json()["current"] == "none"


@pytest.mark.parametrize("server", [pytest.param("postgres", marks=pytest.mark.postgres),
                                    pytest.param("mysql", marks=pytest.mark.mysql)])
def test_instances_on_a_database_server(request, start_cluster, server):
    cluster = start_cluster(2, request.getfixturevalue(f"{server}_url"))
    audit, served_by = flash_sale(cluster, "none", instances=2)
    assert len(served_by) == 2 and audit["products"][0]["oversold"] > 0
    audit, _ = flash_sale(cluster, "local", instances=1)
    assert audit["correct"] is True, audit


@pytest.mark.parametrize("database", ["sqlite",
                                      pytest.param("postgres", marks=pytest.mark.postgres),
                                      pytest.param("mysql", marks=pytest.mark.mysql)])
def test_database_strategies_are_correct_across_instances(request, start_cluster, database):
    cluster = start_cluster(3, request.getfixturevalue(f"{database}_url"))
    names = ["table", "for_update", "optimistic", "atomic"] + (["pg_advisory"] if database == "postgres"
                                                      else [])
    for name in names:
        audit, served_by = flash_sale(cluster, name, instances=3)
        assert len(served_by) == 3, name
        product = audit["products"][0]
        assert (product["sold"], product["remaining"]) == (STOCK, 0), (name, product)
        assert audit["correct"] is True, (name, audit)
