"""The main job: one flash sale per strategy, then one table of what happened.

For every strategy usable on the database (``local`` twice: on one instance
and on all of them) the demo resets the products, switches the cluster to
the strategy, runs Locust headless for a fixed time against the instances,
and reads the audit. Every figure in the table except overlaps, requests/s and
latency comes from the audit, that is, from the database; the overlaps come
from every instance's own record of its holds (two holders of one lock at
once, and how many of those pairs both wrote: a "?" when a record was
incomplete). Then the scheduled jobs
under each guard (``lockshop.workshop.jobs_demo``), and the labs of the broken locks.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from lockshop.table import format_table
from lockshop.workshop.jobs_demo import JobsResult, jobs_table, run_jobs_section
from lockshop.workshop.labs import LABS, run_labs
from lockshop.workshop.runs import (
    FLASH_SALE,
    RunResult,
    plan,
    run_sale,
    say,
    stage,
    staged_only,
)
from shop.config import Config

HEADERS = ("strategy", "instances", "orders", "sold", "remaining", "oversold", "lost updates",
           "double-booked", "retries", "stale", "overlaps", "both wrote", "wake-ups", "req/s",
           "p95 ms", "audit", "expected")


def run_demo(config: Config, *, instances: int = 3, users: int = 24, run_time_s: int = 8,
             business_delay_ms: int = 20, strategies: list[str] | None = None,
             keep: bool = False, server_admin_url: str | None = None) -> int:
    """Run the demo; on a scratch database of ``server_admin_url``'s server when given."""
    runtime = Path(tempfile.mkdtemp(prefix="lockshop-demo-"))
    results: list[RunResult] = []
    jobs: list[JobsResult] = []
    try:
        with stage(config, runtime, server_admin_url, instances) as (cluster, shop_strategies, config):
            runs = plan(shop_strategies, instances, strategies)
            skipped = [n for n in shop_strategies.names() if n not in {r.strategy.name for r in runs}]
            say(f"{instances} instances up on {shop_strategies.database}: {', '.join(cluster.urls)}; "
                f"{len(runs)} runs of {run_time_s}s with {users} Locust users, "
                f"business delay {business_delay_ms} ms")
            for number, run in enumerate(runs, start=1):
                say(f"[{number}/{len(runs)}] {run.strategy.name} on {run.instances} instance(s)…")
                results.append(run_sale(cluster, config, FLASH_SALE, run, users=users,
                                        run_time_s=run_time_s,
                                        business_delay_ms=business_delay_ms,
                                        folder=runtime / f"{number:02d}-{run.strategy.name}"))
            if not strategies:
                jobs = run_jobs_section(cluster, config, shop_strategies, runtime)
    finally:
        if keep:
            say(f"kept {runtime} (instance logs, Locust CSV)")
        else:
            shutil.rmtree(runtime, ignore_errors=True)
    print()
    print(format_table(HEADERS, [_row(r) for r in results]))
    print()
    surprises = [r for r in results if not r.as_expected]
    for r in surprises:
        print(f"UNEXPECTED: {r.run.strategy.name} on {r.run.instances} instance(s) was "
              f"{_verdict(r.correct)}, expected {_verdict(r.run.expected_correct)}")
    job_surprises: list[JobsResult] = []
    if jobs:
        print("\nScheduled jobs on every instance (expire unpaid orders, send reminders), "
              "while buyers pay only some orders:\n")
        print(jobs_table(jobs))
        print()
        job_surprises = [r for r in jobs if r.correct != r.expected_correct]
        for r in job_surprises:
            print(f"UNEXPECTED: jobs guarded by {r.guard} were {_verdict(r.correct)}, "
                  f"expected {_verdict(r.expected_correct)}")
    if not surprises and not job_surprises:
        print("Every strategy behaved as expected.")
    staged = [n for n in skipped if staged_only(shop_strategies.get(n))]
    missing = [n for n in skipped if n not in staged]
    if missing and not strategies:
        print(f"Not run here: {', '.join(missing)} (a backend it needs is missing; "
              "see 'lockshop strategies').")
    labs_failed = []
    if staged and not strategies:
        print("\nBroken on purpose: a flash sale would show them correct, so each one's "
              "failure is staged as a lab, then the fix under the same steps:\n")
        staged_labs = [lab for lab in LABS.values() if lab.name in staged]
        labs_failed = [r for r in run_labs(staged_labs) if not r.holds]
    print("Every lesson of the workshop's articles that is staged: lockshop lab list")
    return 1 if surprises or job_surprises or labs_failed else 0


def _row(result: RunResult) -> tuple:
    totals = result.audit["totals"]
    return (result.run.strategy.name, result.run.instances, totals["orders"], totals["sold"],
            totals["remaining"], totals["oversold"], totals["lost_updates"],
            totals["double_booked_seats"], totals["retries"], totals["stale_writes_rejected"],
            _overlaps(result.overlaps), result.overlaps["both_wrote"],
            result.lock["herd_wakeups"], result.locust.requests_per_second,
            round(result.locust.p95_ms),
            _verdict(result.correct), _verdict(result.run.expected_correct))


def _overlaps(overlaps: dict) -> str:
    """Pairs of holds of one lock at once; "?" marks a count from an incomplete record."""
    return f"{overlaps['overlaps']}{'' if overlaps['complete'] else '?'}"


def _verdict(correct: bool) -> str:
    return "correct" if correct else "WRONG"
