"""The soak's own parts: the seeded schedule, and a short soak that must tell a broken
strategy from a correct one (the ten-minute soak itself is a script, not a test)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import require
from lockshop.cluster.network import unavailable
from lockshop.cluster.redis_servers import redis_server_binary
from lockshop.soak import DATABASE_HOST, HoldsCollector, fault_hosts
from lockshop.soak.faults import KINDS, schedule

INSTANCES = ["shop-1", "shop-2", "shop-3"]


def test_the_same_seed_draws_the_same_faults_and_the_last_seconds_run_clean():
    first = schedule(7, 600, INSTANCES, ["redis"])
    assert first == schedule(7, 600, INSTANCES, ["redis"])
    assert first != schedule(8, 600, INSTANCES, ["redis"])
    assert {f.kind for f in first} == set(KINDS)  # ten minutes draw every kind
    assert all(f.at_s + f.seconds <= 595 for f in first)
    ends = [f.at_s + f.seconds for f in first]
    assert all(end < start for end, start in zip(ends, [f.at_s for f in first[1:]]))


def test_without_a_lock_service_no_fault_is_drawn_against_one():
    kinds = {f.kind for f in schedule(3, 600, INSTANCES, [])}
    assert kinds and not kinds & {"partition", "restart"}


def test_a_database_on_a_host_is_cut_off_and_restarted_like_a_lock_server():
    assert fault_hosts("for_update", "database", on_postgres=False) == []
    assert fault_hosts("pg_advisory", "database", on_postgres=True) == [DATABASE_HOST]
    assert fault_hosts("redis", "redis", on_postgres=True) == ["redis", DATABASE_HOST]
    faults = schedule(3, 600, INSTANCES, [DATABASE_HOST])
    assert {f.target for f in faults if f.kind == "restart"} == {DATABASE_HOST}
    assert any(f.kind == "partition" for f in faults)


def test_a_hold_left_open_by_a_killed_instance_ends_at_the_kill():
    """Otherwise it would overlap every later hold of its lock, to the end of the soak."""
    collector = HoldsCollector({}, since=0.0)

    def hold(at: float, released: float | None) -> dict:
        return {"lock": "product:1", "acquired": at, "released": released, "wrote": True}

    collector.holds = {("shop-1", 10, 1): hold(1.0, None),  # killed at 2.0
                       ("shop-2", 11, 1): hold(3.0, 4.0), ("shop-2", 11, 2): hold(5.0, 6.0)}
    assert collector.audit(killed=[])["overlaps"] == 2  # open: "held" still at the end
    found = collector.audit(killed=[("shop-1", 2.0)])
    assert found["overlaps"] == 0 and found["both_wrote"] == 0, found
    collector.holds[("shop-2", 11, 3)] = hold(1.5, 1.8)  # a real overlap stays one
    found = collector.audit(killed=[("shop-1", 2.0)])
    assert (found["overlaps"], found["both_wrote"]) == (1, 1), found


@pytest.mark.cluster
def test_a_short_soak_fails_the_strategy_without_a_lock_and_passes_redis(tmp_path):
    require(unavailable() is None, f"cannot make hosts on this machine: {unavailable()}")
    require(redis_server_binary() is not None, "redis-server is not installed")
    figures = tmp_path / "soak.json"
    done = subprocess.run([sys.executable, "-m", "lockshop.cli", "soak", "--minutes", "0.5",
                           "--strategies", "none,redis", "--seed", "2", "--json", str(figures)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr  # one strategy was not correct
    results = {r["strategy"]: r for r in json.loads(figures.read_text())}
    none, redis = results["none"], results["redis"]
    assert not none["correct"]
    assert none["audit_totals"]["lost_updates"] > 0 and none["overlaps"]["both_wrote"] > 0
    assert redis["correct"] and redis["orders"] > 0 and len(redis["faults"]) >= 1
    assert redis["overlaps"]["both_wrote"] == 0 and redis["duplicate_orders"] == 0
