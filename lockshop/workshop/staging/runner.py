"""Running labs: each one staged on shared parts, printed step by step as it goes.

``lockshop lab`` and the demo call ``run_labs``; the console runs a lab through
``staging.stage.running`` itself, to show the same records as they arrive.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from lockshop.workshop.staging.record import Lab, LabRecord, Step
from lockshop.workshop.staging.stage import Parts, running
from shop.i18n import N_, _, join

#: How a half is named where it is printed (the records keep "broken", "fix", "measure").
HALVES = {"broken": N_("broken"), "fix": N_("fix"), "measure": N_("measure")}


def run_labs(labs: Iterable[Lab], *, as_json: bool = False, out=None,
             parts: Parts | None = None) -> list[LabRecord]:
    """Stage ``labs`` one after the other on shared parts (``parts``, or servers of
    their own, stopped at the end); print as they go."""
    out = out or sys.stdout
    if parts is not None:
        return [_run_one(lab, parts, as_json, out) for lab in labs]
    runtime = Path(tempfile.mkdtemp(prefix="lockshop-labs-"))
    try:
        with Parts(runtime) as own_parts:
            return [_run_one(lab, own_parts, as_json, out) for lab in labs]
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def _run_one(lab: Lab, parts: Parts, as_json: bool, out) -> LabRecord:
    def say(text: str) -> None:
        if not as_json:
            print(text, file=out, flush=True)

    def on_half(half: str, version: str) -> None:
        say("  " + _("%(half)s: %(version)s", half=_(HALVES.get(half, half)), version=version))

    def on_step(record: LabRecord, step: Step) -> None:
        say(f"    {step.number}. {step.action}")
        say("       " + _("expected: %(expected)s · observed: %(observed)s",
                          expected=step.expected, observed=step.observed)
            + "  " + ("✓" if step.agrees else _("✗ DIFFERS")))

    # A lab beyond the articles names none, and says no empty brackets.
    articles = _(" (%(articles)s)", articles=join(lab.articles)) if lab.articles else ""
    say(f"{lab.id} {lab.name}: {_(lab.title)}{articles}")
    with running(lab, parts, on_step, on_half) as run:
        lab.stage(run)
    record = run.record
    if as_json:
        print(json.dumps(record.as_dict(), ensure_ascii=False), file=out, flush=True)
    elif record.holds and lab.measured:
        say("  => " + _("holds (%(seconds)s s): the figures point the article's way",
                        seconds=f"{record.seconds:g}") + "\n")
    elif record.holds:
        say("  => " + _("holds (%(seconds)s s): the broken version fails as the article "
                        "says; the fix stays correct under the same steps",
                        seconds=f"{record.seconds:g}") + "\n")
    elif record.verdict == "skipped":
        say("  => " + _("SKIPPED: %(reason)s", reason=record.reason) + "\n")
    else:
        say("  => " + _("DOES NOT HOLD (%(seconds)s s): %(reason)s",
                        seconds=f"{record.seconds:g}", reason=record.reason) + "\n")
    return record
