"""The lock benchmark's contended measure is an instrument that can tell a
broken lock: its counter loses increments under a lock that lets two in.

Only what the harness *sees* is asserted, never how fast anything is.
"""

from __future__ import annotations

from lockshop.bench import harness
from lockshop.bench.harness import Endpoints


def test_a_lock_that_lets_two_in_loses_increments(redis_server):
    # ``local`` is a lock per process: 8 processes hold it at once.
    figures = harness.contended("local", Endpoints(redis_server.url), 0.5)
    assert figures.lost_increments > 0


def test_a_correct_lock_loses_none_and_hands_off_after_the_release(redis_server):
    figures = harness.contended("redis", Endpoints(redis_server.url), 0.5)
    assert figures.per_second > 0
    assert figures.lost_increments == 0
    assert figures.handoff_p50_ms > 0  # the next holder starts after the last one ended
