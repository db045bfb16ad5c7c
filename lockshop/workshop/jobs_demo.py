"""The demo's jobs section: the scheduled jobs on every instance, under each guard.

For each guard the cluster is reset, switched to it, and a steady sale runs
in which buyers pay only some of their orders (``loadtest/slow_payers.py``).
Meanwhile every instance fires the expiry and reminder jobs once a second;
unpaid orders expire after two seconds and get a reminder after one. Then
the jobs run a little longer, alone, to finish the leftovers, and the audit
counts what the jobs did twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from loadtest.runner import run_locust
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.table import format_table
from lockshop.workshop.runs import say
from shop.config import Config
from shop.i18n import N_, _
from shop.orders.order_strategies import Strategies

CATALOGUE = (
    {"sku": "keyboard", "name": "Mechanical keyboard", "kind": "item", "stock": 400},
    {"sku": "concert", "name": "Concert, rows A-T", "kind": "ticket", "seats": 200},
)
JOB_SETTINGS = {"job_interval_ms": 1000, "unpaid_expiry_ms": 2000, "reminder_after_ms": 1000,
                "job_lock_at_least_ms": -1}
#: (the sale's strategy, the job guard): the strategy guards both, unless the guard
#: is the leader, when the sale runs lock-free.
GUARDS = (("none", "strategy"), ("local", "strategy"), ("table", "strategy"),
          ("redis", "strategy"), ("zk_fair", "strategy"), ("atomic", "strategy"),
          ("atomic", "leader"))
HEADERS = (N_("jobs guarded by"), N_("instances"), N_("fire times"), N_("runs"),
           N_("duplicate runs"), N_("expired"), N_("restored twice"), N_("reminders"),
           N_("duplicate reminders"), N_("lost runs"), N_("audit"), N_("expected"))


@dataclass(frozen=True)
class JobsResult:
    guard: str
    instances: int
    audit: dict
    expected_correct: bool

    @property
    def correct(self) -> bool:
        return bool(self.audit["jobs"]["correct"]) and bool(self.audit["correct"])


def usable_guards(strategies: Strategies) -> list[tuple[str, str]]:
    """The guards that can run here: their strategy (and ZooKeeper, for the leader)."""
    chosen = []
    for strategy, guard in GUARDS:
        needed = "zk_fair" if guard == "leader" else strategy
        if strategies.available(strategy) and strategies.available(needed):
            chosen.append((strategy, guard))
    return chosen


def run_jobs_section(cluster: Cluster, config: Config, strategies: Strategies, folder: Path,
                     *, users: int = 12, sale_s: int = 6, settle_s: float = 3.0
                     ) -> list[JobsResult]:
    results = []
    guards = usable_guards(strategies)
    admin = ShopClient(cluster.urls[0], config.admin_token)
    for number, (strategy, guard) in enumerate(guards, start=1):
        label = "leader election" if guard == "leader" else strategy
        say(_("[jobs %(number)s/%(total)s] jobs guarded by %(guard)s…", number=number,
              total=len(guards), guard=_("leader election") if guard == "leader" else strategy))
        admin.set_settings(job_interval_ms=0)  # no job sees the reset half done
        time.sleep(0.3)
        admin.reset(list(CATALOGUE))
        admin.set_settings(strategy=strategy, job_guard=guard, business_delay_ms=50,
                           **JOB_SETTINGS)
        run_locust(cluster.urls, locustfile="slow_payers", users=users, run_time_s=sale_s,
                   admin_token=config.admin_token or "",
                   csv_prefix=folder / f"jobs-{number:02d}-{label.replace(' ', '-')}")
        time.sleep(settle_s)  # the jobs finish the leftovers
        admin.set_settings(job_interval_ms=0)
        time.sleep(0.6)  # the last runs end
        expected = True if guard == "leader" else strategies.get(strategy).correct_across_instances
        results.append(JobsResult(_("leader election") if guard == "leader" else strategy,
                                  len(cluster.urls), admin.audit(), expected))
    admin.set_settings(job_guard="strategy", **{**JOB_SETTINGS, "job_interval_ms": 0})
    return results


def jobs_table(results: list[JobsResult]) -> str:
    def row(r: JobsResult) -> tuple:
        jobs = r.audit["jobs"]
        return (r.guard, r.instances, jobs["fire_times"], jobs["runs"], jobs["duplicate_runs"],
                jobs["orders_expired"], jobs["stock_restored_more_than_once"], jobs["reminders"],
                jobs["duplicate_reminders"], jobs["lost_runs"], _verdict(r.correct),
                _verdict(r.expected_correct))
    return format_table([_(h) for h in HEADERS], [row(r) for r in results])


def _verdict(correct: bool) -> str:
    return _("correct") if correct else _("WRONG")
