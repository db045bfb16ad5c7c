"""Locks measured side by side on a machine whose speed drifts: in turns.

One lock after another, a second each, a stall of the machine (another
program, a busy disk) slows only the lock running then: two equal locks
measured 0.90 to 1.26 of each other that way, and a lab once saw Redis at a
fortieth of its usual rate, behind SQLite. In short turns, every lock meets
the same stalls. The benchmarks (``harness.uncontended``) and the measured
labs (C23, C37, C43) all count this way.
"""

from __future__ import annotations

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
