"""Locks measured side by side on a machine whose speed drifts: in turns.

One lock after another, a second each, a stall of the machine (another
program, a busy disk) slows only the lock running then: two equal locks
measured 0.90 to 1.26 of each other that way, and a lab once saw Redis at a
fortieth of its usual rate, behind SQLite. In short turns, every lock meets
the same stalls. The benchmarks (``harness.uncontended``) and the measured
labs (C23, C37, C43) all count this way.

Ten turns of a fraction of a second are enough to rank locks, not to tell two
locks a few per cent apart: ``redis`` measured against itself that way came out
at 0.95 to 1.05 of itself, as wide as a goal of "within 5%". ``side_by_side``
is the finer instrument: two actions alone, in hundreds of turns of some
twenty milliseconds, their order turned each time, and the one measured against
itself as a control that says how far to trust the figure (within 1% here).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import NamedTuple


class Counted(NamedTuple):
    """What an action did in a turn, or in all its turns: how often, in how long."""

    times: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.times / self.seconds


def take_turns(actions: dict[str, Callable[[], object]], seconds: float,
               turns: int) -> dict[str, list[Counted]]:
    """Run each action again and again for ``seconds / turns``, one action after
    another, ``turns`` times over, from one thread: each action's turns."""
    counted: dict[str, list[Counted]] = {name: [] for name in actions}
    for _turn in range(turns):
        for name, action in actions.items():
            done, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds / turns:
                action()
                done += 1
            counted[name].append(Counted(done, time.perf_counter() - started))
    return counted


def overall(turns: list[Counted]) -> Counted:
    """All of an action's turns together."""
    return Counted(sum(turn.times for turn in turns), sum(turn.seconds for turn in turns))


class SideBySide(NamedTuple):
    """One action's rate over another's, and the other's over itself (the control:
    what the same figure is for two equal actions, so 1.0 on a steady machine)."""

    ratio: float
    control: float


def side_by_side(ours: Callable[[], object], theirs: Callable[[], object],
                 theirs_again: Callable[[], object], seconds: float,
                 turns: int) -> SideBySide:
    """``ours`` against ``theirs``, in ``turns`` turns of ``seconds / turns`` each.

    ``theirs_again`` is a second ``theirs`` of its own (a lock on a name of its
    own, say), run in the same turns. Every other turn runs the three in the
    opposite order, so that neither ``ours`` nor ``theirs_again`` always goes
    first. Each figure is a median of one action's rate over another's in the same
    turn, so that a turn a stall of the machine fell on changes it little:

    - the ratio: ``ours`` over ``theirs`` and ``ours`` over ``theirs_again``, all
      the turns' quotients together;
    - the control: ``theirs_again`` over ``theirs``.

    Always one rate over one other, never over a mean of two: on equal actions such a
    quotient is as likely above 1 as below, so its median is 1 whatever the noise of
    the machine, and the control is the very figure the ratio would be if ``ours``
    were ``theirs``. ``ours`` over the mean of the other two (how this was first
    counted) is not: on a busy machine most turns are cut short by other programs and
    a few run whole, a mean of two rates is more often lifted by one whole turn than a
    single rate is, and two equal actions measured 0.81 of each other in a run whose
    control said 1.02.
    """
    order = [("ours", ours), ("theirs", theirs), ("theirs again", theirs_again)]
    rates: dict[str, list[float]] = {name: [] for name, _action in order}
    for _turn in range(turns):
        for name, (turn,) in take_turns(dict(order), seconds / turns, 1).items():
            rates[name].append(turn.per_second)
        order.reverse()
    return compared(rates["ours"], rates["theirs"], rates["theirs again"])


def compared(ours: list[float], theirs: list[float], theirs_again: list[float]) -> SideBySide:
    """The figures of ``side_by_side`` from each action's rate in each turn."""
    ours_over_each = [o / t for o, t in zip(ours, theirs)] + \
        [o / t for o, t in zip(ours, theirs_again)]
    return SideBySide(
        ratio=statistics.median(ours_over_each),
        control=statistics.median(again / first for again, first in zip(theirs_again, theirs)))
