"""The overlap audit: from every instance's own record of its holds, two holders of one
lock at once, and whether both wrote, beside the database's audit.

A sale whose collisions happen not to oversell would pass the database's
audit; mutual exclusion is judged here on its own. Broken strategies show
overlaps in which both wrote; correct ones show none; a fenced one paused past
its lease overlaps, but its late write is refused, so never both wrote.
"""

from __future__ import annotations

import time

import pytest

from helpers import flash_sale, pause_the_holder
from lockshop.cluster.client import ShopClient
from lockshop.cluster.hold_logs import begun_since, collect_holds, overlap_audit, overlaps
from locks.hold_log import HoldLog

pytestmark = pytest.mark.cluster


def audit_of(cluster, since: float) -> dict:
    instances = {i.name: i.url for i in cluster.instances}
    return overlap_audit(collect_holds(instances, since, labs=False, timeout=10))


def test_the_log_marks_writes_and_counts_what_it_forgot():
    log = HoldLog(capacity=2)
    first = log.opened("p:1", "s", "o", None)
    log.wrote(first)
    log.closed(first)
    for _ in range(3):
        log.closed(log.opened("p:1", "s", "o", None))
    assert log.forgotten == 2
    assert [h.wrote for h in log.since()] == [False, False]
    third = log.opened("p:1", "s", "o", None)
    log.read(third)
    log.wrote(third)
    assert [(h.read_at is not None, h.wrote_at is not None)
            for h in log.since()] == [(False, False), (False, False), (True, True)]


def test_the_audit_counts_overlaps_per_lock_and_those_in_which_both_wrote():
    def hold(id_, lock, start, end, wrote):
        return {"id": id_, "lock": lock, "acquired": start, "released": end, "wrote": wrote}
    sources = [{"name": "a", "forgotten": 0, "holds": [hold(1, "p:1", 0, 2, True),
                                                        hold(2, "p:2", 0, 1, True)]},
               {"name": "b", "forgotten": 5, "holds": [hold(1, "p:1", 1, 3, True),
                                                        hold(2, "p:2", 0.5, 1.5, False)]}]
    collected = {"sources": sources, "overlaps": overlaps(sources, now=4)}
    found = overlap_audit(collected, {"a": 0, "b": 5})
    assert (found["holds"], found["overlaps"], found["both_wrote"]) == (4, 2, 1)
    assert found["locks"]["p:1"] == {"holds": 2, "overlaps": 1, "seconds": 1, "both_wrote": 1,
                                     "interleaved": 1}  # no read times: the worst is assumed
    assert found["locks"]["p:2"]["both_wrote"] == 0
    assert found["complete"] is True
    assert overlap_audit(collected, {"a": 0, "b": 4})["complete"] is False  # b forgot one


def test_a_write_that_committed_before_the_next_grant_is_not_a_double_write():
    """The first holder committed at 0.5 and released late, at 2 (a slow link, a pause
    after the commit); the second was granted at 1 and wrote. They overlap, but only
    the second wrote while both held the lock. Had the first committed at 1.2, both
    would have."""
    def hold(id_, start, end, wrote_at):
        return {"id": id_, "lock": "p:1", "acquired": start, "released": end, "wrote": True,
                "wrote_at": wrote_at}
    for first_wrote_at, both in ((0.5, 0), (1.2, 1), (None, 1)):
        sources = [{"name": "a", "holds": [hold(1, 0, 2, first_wrote_at)]},
                   {"name": "b", "holds": [hold(1, 1, 3, 2.5)]}]
        found = overlap_audit({"sources": sources, "overlaps": overlaps(sources, now=4)})
        assert (found["overlaps"], found["both_wrote"]) == (1, both), first_wrote_at


def test_writes_the_storage_put_in_turn_are_not_interleaved():
    """Both wrote while both held (the first committed at 1.2, after the second's grant
    at 1.0). If the second read at 1.1, before that commit, both decided on the same
    stock: interleaved. If its fenced read waited for the commit and read at 1.3, the
    writes went in turn: the second decided on the first's write."""
    def hold(id_, start, end, read_at, wrote_at):
        return {"id": id_, "lock": "p:1", "acquired": start, "released": end, "wrote": True,
                "read_at": read_at, "wrote_at": wrote_at}
    for second_read_at, interleaved in ((1.1, 1), (1.3, 0), (None, 1)):
        sources = [{"name": "a", "holds": [hold(1, 0, 2, 0.1, 1.2)]},
                   {"name": "b", "holds": [hold(1, 1.0, 3, second_read_at, 2.5)]}]
        found = overlap_audit({"sources": sources, "overlaps": overlaps(sources, now=4)})
        assert (found["both_wrote"], found["interleaved"]) == (1, interleaved), second_read_at


@pytest.mark.parametrize("strategy,instances,broken", [
    ("none", 3, True), ("local", 3, True), ("local", 1, False), ("table", 3, False)])
def test_broken_strategies_overlap_and_both_write_correct_ones_never_overlap(
        start_cluster, strategy, instances, broken):
    cluster = start_cluster(3)
    since = time.time()
    flash_sale(cluster, strategy, instances)
    found = audit_of(cluster, since)
    assert found["complete"], found
    product = found["locks"]["product:1"]
    assert product["holds"] >= 10  # every sale took the lock (the stock was 10)
    if broken:
        assert product["overlaps"] > 0 and product["both_wrote"] > 0, product
    else:
        assert product["overlaps"] == 0, product


def test_a_fenced_holder_paused_past_its_lease_overlaps_but_never_both_write(
        start_cluster, redis_server):
    cluster = start_cluster(2, redis_url=redis_server.url, lock_lease_ms=500)
    admin = ShopClient(cluster.urls[1])  # instance 0 is paused for a while
    since = time.time()
    paused, second = pause_the_holder(cluster, admin, "redis", paused_for=0.7)
    assert (paused.status_code, second.status_code) == (503, 201)
    product = audit_of(cluster, since)["locks"]["product:1"]
    assert product["overlaps"] == 1 and product["both_wrote"] == 0, product


def test_a_run_counts_only_the_holds_it_began():
    def hold(id_, start, end):
        return {"id": id_, "lock": "job:x", "acquired": start, "released": end, "wrote": True}
    # A job of the run before (begun at 0) still ran when this run began (at 5).
    collected = {"now": 9, "sources": [{"name": "a", "holds": [hold(1, 0, 6)]},
                                       {"name": "b", "holds": [hold(1, 5.5, 7)]}]}
    collected["overlaps"] = overlaps(collected["sources"], 9)
    assert overlap_audit(collected)["overlaps"] == 1
    assert overlap_audit(begun_since(collected, 5))["overlaps"] == 0
