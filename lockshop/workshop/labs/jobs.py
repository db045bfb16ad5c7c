"""Labs of scheduled jobs on a cluster (A0, A1): a job that runs once per
instance instead of once in the cluster, and the guards that fix it.

Three shop instances fire the same jobs at the same wall-clock times (every
second): expire unpaid orders and give their stock back (A0's cleanup job),
and remind their buyers to pay (A1's SMS). Each job reads its orders, spends
the business delay on them, then writes, so unguarded runs on the three
instances all read before any of them writes.
"""

from __future__ import annotations

import time

from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.workshop.labs.record import Lab
from shop.config import Config

ORDERS = 4
INTERVAL_MS = 1000
INSTANCES = 3
STOCK = 20


def place_unpaid_orders(urls: list[str], admin: ShopClient, strategy: str, **settings) -> None:
    """Reset, switch to ``strategy`` with the jobs off, and place ORDERS orders nobody pays,
    spread over the instances."""
    admin.reset([{"sku": "x", "stock": STOCK}, {"sku": "gig", "kind": "ticket", "seats": 10}])
    admin.set_settings(strategy=strategy, job_interval_ms=0, business_delay_ms=0, **settings)
    for n in range(ORDERS):
        answer = ShopClient(urls[n % len(urls)]).order(product_id=1 + n % 2)
        if answer != 201:
            raise RuntimeError(f"an unpaid order for the jobs was refused: {answer}")


def run_jobs(admin: ShopClient, fire_times: int = 2, delay_ms: int = 200, **settings) -> dict:
    """Let the jobs fire ``fire_times`` times (each expires and reminds every order at once);
    the audit after.

    The jobs are switched on and off halfway between fire times: each instance
    notices a switch at its next tick, and a switch close to a fire time would
    have some instances count that fire time and others not.
    """
    interval = INTERVAL_MS / 1000
    now = time.time()
    switch_on = now - now % interval + interval / 2
    if switch_on < now + 0.1:
        switch_on += interval
    time.sleep(switch_on - now)
    admin.set_settings(business_delay_ms=delay_ms, unpaid_expiry_ms=0, reminder_after_ms=0,
                       job_interval_ms=INTERVAL_MS, **settings)
    time.sleep(max(0.0, switch_on + fire_times * interval - time.time()))
    admin.set_settings(job_interval_ms=0)
    time.sleep(0.6)  # let the last runs finish
    return admin.audit()


def _jobs_on_three_instances(run, halves) -> None:
    """Each half: (half, version, how, sale strategy, settings, check(audit) -> None)."""
    servers = {"redis_url": run.parts.redis()[0].url}
    if any(settings.get("job_guard") == "leader" for *_, settings, _ in halves):
        servers["zk_hosts"] = run.parts.zookeeper().address
    folder = run.parts.folder(run.lab.name)
    config = Config(database_url=f"sqlite:///{folder / 'shop.db'}", **servers)
    with Cluster(config, instances=INSTANCES, runtime_dir=folder) as cluster:
        admin = ShopClient(cluster.urls[0])
        for half, version, how, strategy, settings, check in halves:
            getattr(run, half)(version, how)
            place_unpaid_orders(cluster.urls, admin, strategy, **settings)
            check(run_jobs(admin))


def stage_cleanup_job(run) -> None:
    def broken(audit: dict) -> None:
        jobs = audit["jobs"]
        run.check(f"{ORDERS} unpaid orders expire; the cleanup job fires on all "
                  f"{INSTANCES} instances",
                  expected=f"each instance gives the stock back: {ORDERS} orders restored "
                           f"{INSTANCES} times, {ORDERS * (INSTANCES - 1)} restorations too many",
                  observed=f"orders expired {jobs['orders_expired']}; restorations too many "
                           f"{jobs['stock_restored_more_than_once']}; stock now "
                           f"{audit['totals']['remaining']} of {STOCK + 10}",
                  agrees=jobs["stock_restored_more_than_once"] == ORDERS * (INSTANCES - 1))

    def fixed(audit: dict) -> None:
        jobs = audit["jobs"]
        run.check(f"{ORDERS} unpaid orders expire; the cleanup job fires on all "
                  f"{INSTANCES} instances",
                  expected="one instance holds the job's lock per fire time: each order's "
                           "stock comes back once",
                  observed=f"orders expired {jobs['orders_expired']}; restorations too many "
                           f"{jobs['stock_restored_more_than_once']}; stock now "
                           f"{audit['totals']['remaining']} of {STOCK + 10}",
                  agrees=jobs["orders_expired"] == ORDERS
                  and jobs["stock_restored_more_than_once"] == 0
                  and audit["totals"]["remaining"] == STOCK + 10)

    _jobs_on_three_instances(run, (
        ("broken", "none", "every instance runs the job at every fire time", "none", {},
         broken),
        ("fix", "redis", "the job takes a Redis lock per job, tried once, skipped if held",
         "redis", {}, fixed)))


def _reminders(audit: dict) -> str:
    jobs = audit["jobs"]
    return f"reminders sent {jobs['reminders']}; duplicates {jobs['duplicate_reminders']}"


def stage_reminders(run) -> None:
    def broken(audit: dict) -> None:
        run.check(f"{ORDERS} customers have not paid; the reminder job fires on all "
                  f"{INSTANCES} instances",
                  expected=f"every customer gets {INSTANCES} reminders "
                           f"({ORDERS * INSTANCES} in all)",
                  observed=_reminders(audit),
                  agrees=audit["jobs"]["reminders"] == ORDERS * INSTANCES)

    def fixed(audit: dict) -> None:
        run.check(f"{ORDERS} customers have not paid; the reminder job fires on all "
                  f"{INSTANCES} instances",
                  expected=f"one reminder each: {ORDERS}",
                  observed=_reminders(audit),
                  agrees=audit["jobs"]["reminders"] == ORDERS
                  and audit["jobs"]["duplicate_reminders"] == 0)

    _jobs_on_three_instances(run, (
        ("broken", "none", "every instance sends the reminders at every fire time", "none", {},
         broken),
        ("fix", "redis", "the job takes a Redis lock per job, tried once, skipped if held",
         "redis", {}, fixed)))


def stage_leader(run) -> None:
    def runs_per_fire_time(audit: dict) -> str:
        jobs = audit["jobs"]
        return (f"{jobs['runs']} runs for {jobs['fire_times']} fire times; "
                f"duplicates {jobs['duplicate_runs']}")

    def broken(audit: dict) -> None:
        run.check(f"the jobs fire twice on {INSTANCES} instances",
                  expected=f"every fire time runs {INSTANCES} times",
                  observed=runs_per_fire_time(audit),
                  agrees=audit["jobs"]["duplicate_runs"]
                  == (INSTANCES - 1) * audit["jobs"]["fire_times"] > 0)

    def fixed(audit: dict) -> None:
        run.check(f"the jobs fire twice on {INSTANCES} instances",
                  expected="only the elected leader runs them: once per fire time",
                  observed=runs_per_fire_time(audit),
                  agrees=audit["jobs"]["duplicate_runs"] == 0
                  and audit["jobs"]["fire_times"] > 0 and audit["jobs"]["correct"])

    _jobs_on_three_instances(run, (
        ("broken", "none", "every instance runs its own scheduler", "none", {}, broken),
        ("fix", "leader election", "instances queue for one ZooKeeper lock; its holder leads",
         "none", {"job_guard": "leader"}, fixed)))


LABS = (
    Lab("C04", "cleanup_job", "A scheduled cleanup job on every node gives an expired "
        "order's stock back once per node; a job lock runs it once", ("A0",),
        ("redis", "instances"), 8, stage_cleanup_job),
    Lab("C05", "reminders", "A reminder job on N servers sends every customer N messages; a "
        "job lock sends one", ("A1",), ("redis", "instances"), 8, stage_reminders),
    Lab("C24", "leader", "Leader election makes a cluster job run once per fire time",
        ("A1",), ("zookeeper", "instances"), 9, stage_leader),
)
