"""``side_by_side`` is an instrument that can tell two actions apart by their
cost, and its control says when it cannot: only ratios within one run are
asserted, never how fast anything is."""

from __future__ import annotations

from lockshop.turns import side_by_side


def _work() -> int:
    return sum(range(3_000))


def test_side_by_side_sees_an_action_that_does_twice_the_work():
    twice = side_by_side(lambda: (_work(), _work()), _work, _work, seconds=0.5, turns=100)
    assert 0.4 < twice.ratio < 0.6
    assert 0.9 < twice.control < 1.1


def test_side_by_side_sees_two_equal_actions_as_equal():
    same = side_by_side(_work, _work, _work, seconds=0.5, turns=100)
    assert 0.9 < same.ratio < 1.1
    assert 0.9 < same.control < 1.1
