"""Labs of scheduled jobs on a cluster (A0, A1): a job that runs once per
instance instead of once in the cluster, and the guards that fix it.

Three shop instances fire the same jobs at the same wall-clock times (every
second): expire unpaid orders and give their stock back (A0's cleanup job),
and remind their buyers to pay (A1's SMS). Each job reads its orders, spends
the business delay on them, then writes, so unguarded runs on the three
instances all read before any of them writes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import nullcontext

from locks import Backends, LockLost
from locks.redis_support import KEY_PREFIX
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.workshop.labs.redis_leases import server_client, wait_for
from lockshop.workshop.staging.record import Lab
from shop.config import Config
from shop.errors import SoldOut
from shop.jobs.tasks import JobContext, expire_unpaid, send_reminders
from shop.orders.order_path import OrderContext, OrderRequest
from shop.orders.order_strategies import Strategies
from shop.store.audit import take_audit
from shop.store.db import engine_of
from shop.store.models import ProductKind, utcnow
from shop.store.products import ProductSpec
from shop.i18n import N_, _

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


def run_jobs(admin: ShopClient, fire_times: int = 2, delay_ms: int = 200,
             interval_ms: int = INTERVAL_MS, until: Callable[[], bool] | None = None,
             **settings) -> dict:
    """Let the jobs fire ``fire_times`` times, every ``interval_ms`` (each expires and
    reminds every order at once, unless ``settings`` say otherwise); the audit after.

    The jobs are switched on and off halfway between fire times: each instance
    notices a switch at its next tick, and a switch close to a fire time would
    have some instances count that fire time and others not.

    With ``until`` (the tests': "every job has runs for that many fire times"), the
    jobs stay on, fire time after fire time, until it says True, and the last runs
    are waited for by what the instances record: a loaded machine's late fire times
    then cost time, not a fire time.
    """
    interval = interval_ms / 1000
    now = time.time()
    switch_on = now - now % interval + interval / 2
    if switch_on < now + 0.1:
        switch_on += interval
    time.sleep(switch_on - now)
    admin.set_settings(**{"business_delay_ms": delay_ms, "unpaid_expiry_ms": 0,
                          "reminder_after_ms": 0, "job_interval_ms": interval_ms, **settings})
    time.sleep(max(0.0, switch_on + fire_times * interval - time.time()))
    if until is None:
        admin.set_settings(job_interval_ms=0)
        time.sleep(0.6)  # let the last runs finish
        return admin.audit()
    _wait(until, f"the jobs to run {fire_times} fire times")
    time.sleep((switch_on - time.time()) % interval)  # to halfway between fire times
    admin.set_settings(job_interval_ms=0)
    _wait(lambda: all(run["outcome"] != "running"
                      for run in admin.get("/api/admin/jobs")["runs"]), "the last runs to end")
    return admin.audit()


def _wait(condition: Callable[[], bool], what: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"waited {seconds:g} s for {what}")
        time.sleep(0.1)


def _jobs_on_three_instances(run, halves) -> None:
    """Each half: (half, version, how, sale strategy, settings, check(audit) -> None)."""
    servers = {"redis_url": run.parts.redis()[0].url}
    if any(settings.get("job_guard") == "leader" for *_, settings, _ in halves):
        servers["zk_hosts"] = run.parts.zookeeper().address
    folder = run.parts.folder(run.lab.name)
    # Jobs off from the start: a fire time of the default schedule before the first
    # half's settings would run jobs on every instance, under no guard.
    config = Config(database_url=f"sqlite:///{folder / 'shop.db'}", job_interval_ms=0, **servers)
    with Cluster(config, instances=INSTANCES, runtime_dir=folder) as cluster:
        admin = ShopClient(cluster.urls[0])
        for half, version, how, strategy, settings, check in halves:
            getattr(run, half)(version, how)
            place_unpaid_orders(cluster.urls, admin, run.version(strategy), **settings)
            check(run_jobs(admin))


def _expired(audit: dict) -> str:
    jobs = audit["jobs"]
    return _("orders expired %(expired)s; restorations too many %(extra)s; stock now %(now)s "
             "of %(of)s", expired=jobs["orders_expired"],
             extra=jobs["stock_restored_more_than_once"], now=audit["totals"]["remaining"],
             of=STOCK + 10)


def stage_cleanup_job(run) -> None:
    def action() -> str:
        return _("%(orders)s unpaid orders expire; the cleanup job fires on all %(instances)s "
                 "instances", orders=ORDERS, instances=INSTANCES)

    def broken(audit: dict) -> None:
        jobs = audit["jobs"]
        run.check(action(),
                  expected=_("each instance gives the stock back: %(orders)s orders restored "
                             "%(instances)s times, %(extra)s restorations too many",
                             orders=ORDERS, instances=INSTANCES,
                             extra=ORDERS * (INSTANCES - 1)),
                  observed=_expired(audit),
                  agrees=jobs["stock_restored_more_than_once"] == ORDERS * (INSTANCES - 1))

    def fixed(audit: dict) -> None:
        jobs = audit["jobs"]
        run.check(action(),
                  expected=_("one instance holds the job's lock per fire time: each order's "
                             "stock comes back once"),
                  observed=_expired(audit),
                  agrees=jobs["orders_expired"] == ORDERS
                  and jobs["stock_restored_more_than_once"] == 0
                  and audit["totals"]["remaining"] == STOCK + 10)

    _jobs_on_three_instances(run, (
        ("broken", "none", _("every instance runs the job at every fire time"), "none", {},
         broken),
        ("fix", "redis", _("the job takes a Redis lock per job, tried once, skipped if held"),
         "redis", {}, fixed)))


def _reminders(audit: dict) -> str:
    jobs = audit["jobs"]
    return _("reminders sent %(sent)s; duplicates %(twice)s", sent=jobs["reminders"],
             twice=jobs["duplicate_reminders"])


def stage_reminders(run) -> None:
    def action() -> str:
        return _("%(orders)s customers have not paid; the reminder job fires on all "
                 "%(instances)s instances", orders=ORDERS, instances=INSTANCES)

    def broken(audit: dict) -> None:
        run.check(action(),
                  expected=_("every customer gets %(instances)s reminders (%(all)s in all)",
                             instances=INSTANCES, all=ORDERS * INSTANCES),
                  observed=_reminders(audit),
                  agrees=audit["jobs"]["reminders"] == ORDERS * INSTANCES)

    def fixed(audit: dict) -> None:
        run.check(action(),
                  expected=_("one reminder each: %(orders)s", orders=ORDERS),
                  observed=_reminders(audit),
                  agrees=audit["jobs"]["reminders"] == ORDERS
                  and audit["jobs"]["duplicate_reminders"] == 0)

    _jobs_on_three_instances(run, (
        ("broken", "none", _("every instance sends the reminders at every fire time"), "none",
         {}, broken),
        ("fix", "redis", _("the job takes a Redis lock per job, tried once, skipped if held"),
         "redis", {}, fixed)))


def stage_leader(run) -> None:
    def runs_per_fire_time(audit: dict) -> str:
        jobs = audit["jobs"]
        return _("%(runs)s runs for %(fire_times)s fire times; duplicates %(twice)s",
                 runs=jobs["runs"], fire_times=jobs["fire_times"], twice=jobs["duplicate_runs"])

    def broken(audit: dict) -> None:
        # A fire time at the very edge of the window (the switch is seen at an instance's
        # next tick, later on a busy machine) may run on fewer instances than the rest.
        run.check(_("the jobs fire twice on %(instances)s instances", instances=INSTANCES),
                  expected=_("every fire time runs on each of the %(instances)s instances (one "
                             "at the window's edge may catch fewer): at least twice as many "
                             "runs as fire times", instances=INSTANCES),
                  observed=runs_per_fire_time(audit),
                  agrees=audit["jobs"]["duplicate_runs"] >= audit["jobs"]["fire_times"] > 0)

    def fixed(audit: dict) -> None:
        run.check(_("the jobs fire twice on %(instances)s instances", instances=INSTANCES),
                  expected=_("only the elected leader runs them: once per fire time"),
                  observed=runs_per_fire_time(audit),
                  agrees=audit["jobs"]["duplicate_runs"] == 0
                  and audit["jobs"]["fire_times"] > 0 and audit["jobs"]["correct"])

    _jobs_on_three_instances(run, (
        ("broken", "none", _("every instance runs its own scheduler"), "none", {}, broken),
        ("fix", _("leader election"), _("instances queue for one ZooKeeper lock; its holder "
                                     "leads"),
         "none", {"job_guard": "leader"}, fixed)))


# --- C35: a job longer than its lease ------------------------------------------------------------

def stage_job_longer_than_lease(run) -> None:
    """Run A holds the job's lock (lease 300 ms) and works 600 ms; run B, on another
    instance, fires 400 ms in, takes the lock A's lease let go of, and works fast.

    Forced, not timed: B fires once A has read the orders due and begun its work, 400 ms
    have passed and A's key is gone from Redis (B once fired while A, descheduled, had
    not read yet, and A found nothing left to send); A's work goes on until B's run is
    over; and B's lease is long, so that a busy machine cannot make it run out before
    B's writes (it once did, and B, the rightful holder, stopped too)."""
    server, = run.parts.redis()
    for half, how, recheck in (
            ("broken", _("the job checks its lock when it starts, and then writes"), False),
            ("fix", _("the job checks its lock again before every write"), True)):
        getattr(run, half)("redis", how)
        sessions = run.shop_database(ProductSpec("x", "Lab item", ProductKind.ITEM, stock=10))
        for _order in range(ORDERS):
            place_order_unguarded(sessions)
        a_factory = run.open_locks("redis", redis_url=server.url, lease_ms=300)
        b_factory = run.open_locks("redis", redis_url=server.url, lease_ms=30_000)
        outcomes: dict[str, str] = {}
        sent: dict[str, int] = {}
        stopped: set[str] = set()
        a_working, b_done = threading.Event(), threading.Event()

        def a_works(seconds: float) -> None:
            a_working.set()  # A has read the orders due
            time.sleep(seconds)
            b_done.wait(30)  # A is still "working" when B is done: its lease ran out long ago

        def job_run(name: str, factory, work_ms: int, sleep=time.sleep) -> None:
            lock = factory.lock("job:send_reminders")
            if not lock.acquire(blocking=False):
                outcomes[name] = _("skipped: the lock is held")
                return
            context = JobContext(name, fire_time=utcnow(), now=utcnow(),
                                 business_delay_ms=work_ms,
                                 still_ours=(lambda db: lock.ensure_held()) if recheck
                                 else (lambda db: None),
                                 exclude_orders=lambda product: nullcontext(), sleep=sleep)
            try:
                sent[name] = send_reminders(engine_of(sessions), context, 0)
                outcomes[name] = _("sent %(count)s", count=sent[name])
            except LockLost:
                stopped.add(name)
                outcomes[name] = _("stopped before writing: its lock was gone")
            try:
                lock.release()
            except LockLost:
                pass  # its lease had run out: nothing to give back

        a = threading.Thread(target=job_run, args=("A", a_factory, 600, a_works))
        a.start()
        a_working.wait(30)
        time.sleep(0.4)
        wait_for(lambda: not server_client(server).exists(KEY_PREFIX + "job:send_reminders"),
                 "A's key to expire")
        try:
            job_run("B", b_factory, 0)
        finally:
            b_done.set()
        a.join()
        jobs = take_audit(sessions).jobs
        observed = _("A %(a)s; B %(b)s; reminders %(sent)s, duplicates %(twice)s",
                     a=outcomes.get("A", "?"), b=outcomes["B"], sent=jobs.reminders,
                     twice=jobs.duplicate_reminders)
        action = _("%(orders)s unpaid orders; A's run takes the lock and works 600 ms; B's run "
                   "fires 400 ms later", orders=ORDERS)
        if half == "broken":
            run.check(action, expected=_("both runs send: every customer reminded twice"),
                      observed=observed, agrees=sent.get("A") == sent.get("B") == ORDERS
                      and jobs.duplicate_reminders == ORDERS)
        else:
            run.check(action, expected=_("B sends; A finds its lock gone before writing and "
                                         "stops: one reminder each"), observed=observed,
                      agrees="A" in stopped and sent.get("B") == ORDERS
                      and jobs.reminders == ORDERS and jobs.duplicate_reminders == 0)


def place_order_unguarded(sessions) -> None:
    Strategies(Backends(), "sqlite").runner("atomic")(
        engine_of(sessions), OrderRequest(1), OrderContext("lab", "atomic", 0, 1000))


# --- C42: stock held by unpaid orders -----------------------------------------------------------

def stage_unpaid_orders(run) -> None:
    for half, how, expire in (
            ("broken", _("the stock is taken when the order is placed, and nothing gives it "
                         "back"), False),
            ("fix", _("the same, and a job expires unpaid orders and returns their stock"),
             True)):
        getattr(run, half)("atomic", how)
        sessions = run.shop_database(ProductSpec("x", "Lab item", ProductKind.ITEM, stock=3))
        for _order in range(3):
            place_order_unguarded(sessions)
        run.check(_("3 buyers order the last 3 units, and never pay"),
                  expected=_("the stock reads 0: the units are held by the unpaid orders"),
                  observed=_("stock %(stock)s", stock=_stock(sessions)),
                  agrees=_stock(sessions) == 0)
        if expire:
            context = JobContext("lab", fire_time=utcnow(), now=utcnow(), business_delay_ms=0,
                                 still_ours=lambda db: None,
                                 exclude_orders=lambda product: Strategies(
                                     Backends(), "sqlite").excluding_orders(
                                     "atomic", product, OrderContext("lab", "atomic", 0, 1000)))
            expired = expire_unpaid(engine_of(sessions), context, 0)
            run.check(_("the expiry job fires (unpaid for longer than the allowed time)"),
                      expected=_("it expires the 3 orders and gives their units back"),
                      observed=_("expired %(expired)s; stock %(stock)s", expired=expired,
                                 stock=_stock(sessions)),
                      agrees=expired == 3 and _stock(sessions) == 3)
        try:
            place_order_unguarded(sessions)
            sold = True
        except SoldOut:
            sold = False
        answer = _("sold") if sold else _("sold out")
        action = _("a fourth buyer, who would pay, orders one unit")
        if half == "broken":
            run.check(action, expected=_("sold out: nobody paid, and yet nothing can be sold"),
                      observed=answer, agrees=not sold)
        else:
            run.check(action, expected=_("sold: the unit came back"), observed=answer,
                      agrees=sold)


def _stock(sessions) -> int:
    return take_audit(sessions).products[0].remaining


LABS = (
    Lab("C04", "cleanup_job", N_("A scheduled cleanup job on every node gives an expired "
        "order's stock back once per node; a job lock runs it once"), ("A0",),
        ("redis", "instances"), 8, stage_cleanup_job),
    Lab("C05", "reminders", N_("A reminder job on N servers sends every customer N messages; a "
        "job lock sends one"), ("A1",), ("redis", "instances"), 8, stage_reminders),
    Lab("C35", "job_lease", N_("A scheduled job longer than its lease runs twice unless it "
        "re-checks its lock before writing"), ("A2",), ("redis",), 2, stage_job_longer_than_lease),
    Lab("C42", "unpaid_orders", N_("Stock taken at order time is held by unpaid orders until the "
        "expiry job gives it back"), ("A0",), (), 1, stage_unpaid_orders),
    Lab("C24", "leader", N_("Leader election makes a cluster job run once per fire time"),
        ("A1",), ("zookeeper", "instances"), 9, stage_leader),
)
