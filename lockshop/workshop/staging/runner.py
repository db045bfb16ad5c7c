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
        say(f"  {half}: {version}")

    def on_step(record: LabRecord, step: Step) -> None:
        say(f"    {step.number}. {step.action}")
        say(f"       expected: {step.expected} · observed: {step.observed}  "
            f"{'✓' if step.agrees else '✗ DIFFERS'}")

    say(f"{lab.id} {lab.name}: {lab.title}  ({', '.join(lab.articles)})")
    with running(lab, parts, on_step, on_half) as run:
        lab.stage(run)
    record = run.record
    if as_json:
        print(json.dumps(record.as_dict(), ensure_ascii=False), file=out, flush=True)
    elif record.holds and lab.measured:
        say(f"  => holds ({record.seconds:g} s): the figures point the article's way\n")
    elif record.holds:
        say(f"  => holds ({record.seconds:g} s): the broken version failed as the article "
            "says, and the fix held under the same steps\n")
    elif record.verdict == "skipped":
        say(f"  => SKIPPED: {record.reason}\n")
    else:
        say(f"  => DOES NOT HOLD ({record.seconds:g} s): {record.reason}\n")
    return record
