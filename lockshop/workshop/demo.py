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

from lockshop.invoked import lockshop_command
from lockshop.table import format_table
from lockshop.workshop.jobs_demo import JobsResult, jobs_table, run_jobs_section
from lockshop.workshop.labs import LABS
from lockshop.workshop.staging.runner import run_labs
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
from shop.i18n import N_, _

HEADERS = (N_("strategy"), N_("instances"), N_("orders"), N_("sold"), N_("remaining"),
           N_("oversold"), N_("lost updates"), N_("double-booked"), N_("retries"), N_("stale"),
           N_("overlaps"), N_("both wrote"), N_("wake-ups"), N_("req/s"), N_("p95 ms"),
           N_("audit"), N_("expected"))


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
            say(_("%(instances)s instances up on %(database)s: %(urls)s; %(runs)s runs of "
                  "%(seconds)ss with %(users)s Locust users, business delay %(delay)s ms",
                  instances=instances, database=shop_strategies.database,
                  urls=", ".join(cluster.urls), runs=len(runs), seconds=run_time_s,
                  users=users, delay=business_delay_ms))
            for number, run in enumerate(runs, start=1):
                say(_("[%(number)s/%(total)s] %(strategy)s on %(instances)s instance(s)…",
                      number=number, total=len(runs), strategy=run.strategy.name,
                      instances=run.instances))
                results.append(run_sale(cluster, config, FLASH_SALE, run, users=users,
                                        run_time_s=run_time_s,
                                        business_delay_ms=business_delay_ms,
                                        folder=runtime / f"{number:02d}-{run.strategy.name}"))
            if not strategies:
                jobs = run_jobs_section(cluster, config, shop_strategies, runtime)
    finally:
        if keep:
            say(_("kept %(folder)s (instance logs, Locust CSV)", folder=runtime))
        else:
            shutil.rmtree(runtime, ignore_errors=True)
    print()
    print(format_table([_(h) for h in HEADERS], [_row(r) for r in results]))
    print()
    surprises = [r for r in results if not r.as_expected]
    for r in surprises:
        print(_("UNEXPECTED: %(strategy)s on %(instances)s instance(s) was %(verdict)s, "
                "expected %(expected)s", strategy=r.run.strategy.name,
                instances=r.run.instances, verdict=_run_verdict(r),
                expected=_verdict(r.run.expected_correct)))
    job_surprises: list[JobsResult] = []
    if jobs:
        print("\n" + _("Scheduled jobs on every instance (expire unpaid orders, send "
                       "reminders), while buyers pay only some orders:") + "\n")
        print(jobs_table(jobs))
        print()
        job_surprises = [r for r in jobs if r.correct != r.expected_correct]
        for r in job_surprises:
            print(_("UNEXPECTED: jobs guarded by %(guard)s were %(verdict)s, expected "
                    "%(expected)s", guard=r.guard, verdict=_verdict(r.correct),
                    expected=_verdict(r.expected_correct)))
    if not surprises and not job_surprises:
        print(_("Every strategy behaved as expected."))
    staged = [n for n in skipped if staged_only(shop_strategies.get(n))]
    missing = [n for n in skipped if n not in staged]
    if missing and not strategies:
        print(_("Not run here: %(strategies)s (a backend it needs is missing; see "
                "'lockshop strategies').", strategies=", ".join(missing)))
    labs_failed = []
    if staged and not strategies:
        print("\n" + _("Broken on purpose: a flash sale would show them correct, so each "
                       "one's failure is staged as a lab, then the fix under the same "
                       "steps:") + "\n")
        staged_labs = [lab for lab in LABS.values() if lab.name in staged]
        labs_failed = [r for r in run_labs(staged_labs) if not r.holds]
    print(_("Every lesson of the workshop's articles that is staged: %(lockshop)s lab list",
            lockshop=lockshop_command()))
    return 1 if surprises or job_surprises or labs_failed else 0


def _row(result: RunResult) -> tuple:
    totals = result.audit["totals"]
    return (result.run.strategy.name, result.run.instances, totals["orders"], totals["sold"],
            totals["remaining"], totals["oversold"], totals["lost_updates"],
            totals["double_booked_seats"], totals["retries"], totals["stale_writes_rejected"],
            _overlaps(result.overlaps), result.overlaps["both_wrote"],
            result.lock["herd_wakeups"], result.locust.requests_per_second,
            round(result.locust.p95_ms),
            _run_verdict(result), _verdict(result.run.expected_correct))


def _overlaps(overlaps: dict) -> str:
    """Pairs of holds of one lock at once; "?" marks a count from an incomplete record."""
    return f"{overlaps['overlaps']}{'' if overlaps['complete'] else '?'}"


def _verdict(correct: bool) -> str:
    return _("correct") if correct else _("WRONG")


def _run_verdict(result: RunResult) -> str:
    return _verdict(result.correct) if result.sold_anything else _("no orders")
