"""``lockshop exercise``: the lessons turned round, so that the student writes the lock.

The package itself imports nothing: a holder process (``lockshop.cluster.holder``) or a
room's sandbox that needs one module of it does not pay for every check. The registry
of exercises is ``registry``; its names are handed out from here when first asked for
(``from lockshop.exercises import EXERCISES, Exercise, find``).

    registry     the exercises, in order: what each asks, its checks, its reference
    grading      Check, and Grading: the harness a check runs on (servers, the
                 student's locks, holders in processes of their own, threads)
    grader       grade(): run an exercise's checks on a student's file
    results      CheckResult, Grade, Rounds: every form a grade takes
    diagnoses    the known mistakes, shown by probes when a check fails
    checks/      the checks, one module per kind of lesson
"""

from __future__ import annotations

_FROM_REGISTRY = frozenset({"EXERCISES", "Exercise", "find", "listing"})


def __getattr__(name: str):
    if name in _FROM_REGISTRY:
        from lockshop.exercises import registry
        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_FROM_REGISTRY)
