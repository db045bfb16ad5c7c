"""The job guard's lessons, on a student's guard (a ``JobGuard`` subclass).

Exercise 15 (C04, C05, C42): three shop instances, each with its own scheduler,
fire the expiry job and the reminder job at the same wall-clock times, with the
student's guard plugged in (``Config.extra_guards``). Each run reads its
orders, then spends the business delay on them before it writes, so that runs
the guard lets through together all read the same orders: the shop's audit
counts the stock given back more than once and the customers reminded twice.
One cluster run serves the three checks (each reads its own part of it).

Exercise 16 (C35): run A of the reminder job takes the guard, reads its orders
and is held in its business delay (the job's own ``sleep``) until its lock's
lease has run out and run B, another instance at a later fire time, has taken
the guard and sent the reminders. Then A goes on to write. Only a guard that
checks it still holds its lock before each write (``ensure_held``) stops A.
The runs are made as the scheduler makes them (the guard, then the job under
it, in one thread), but without the scheduler's own "hold at most" clock,
which would stop A as well and hide whether the guard does.

Graded out of process (``grader.out_of_process``), the runs are still the grader's, here,
and their guard the student's, in the lock host (``remote_guards``): each run makes it,
takes it, checks it before each write and gives it back over the protocol. The shop
instances of the cluster's checks run as the student's user, as a lock's sale's do.
"""

from __future__ import annotations

import threading
import time
import weakref
from contextlib import nullcontext
from typing import TYPE_CHECKING

from locks import LockLost
from lockshop.exercises.grading import Check, Grading
from lockshop.exercises.remote_guards import student_guards
from shop.config import Config
from shop.i18n import _, lazy_gettext
from shop.store.models import utc_at

if TYPE_CHECKING:
    from shop.state import ShopState

INSTANCES = 3
#: The name the shop instances give the student's guard (the setting ``job_guard``).
GUARD = "exercise"
TOKEN = "exercise"
#: Each run's business delay: every instance the guard lets through reads before any
#: writes (the schedulers fire within a tick, 50 ms, of each other).
DELAY_MS = 400
#: The guard's lock in the cluster: far longer than a run.
CLUSTER_LEASE_MS = 5000
#: Run A's lease in exercise 16: it runs out while A is held; B's outlasts its run.
SHORT_LEASE_MS = 400
LONG_LEASE_MS = 10_000
JOB = "send_reminders"

_cluster_runs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# --- exercise 15: one fire time, two runs; then the jobs on three instances ------------------

def one_run_takes_it(grading: Grading) -> tuple[str, bool]:
    """Two runs of one fire time at once, on two shops (threads of the grader's process,
    each with a shop state of its own; their guards in the student's process, where it is
    graded out of process): one takes the guard, the other skips; once it is given back,
    the next fire time's run takes it."""
    grading.redis().flushdb()
    a, b = shop_states(grading, (LONG_LEASE_MS, LONG_LEASE_MS))
    try:
        with student_guards(grading) as guards:
            return _one_takes_it(grading, a, b, guards)
    finally:
        close_states(a, b)


def _one_takes_it(grading: Grading, a: ShopState, b: ShopState, guards) -> tuple[str, bool]:
    settings = a.settings()
    fire_time = utc_at(time.time())
    both = threading.Barrier(2)
    runs = [JobRun(grading, state, fire_time, settings, keep=True, start=both,
                   guard_class=guards) for state in (a, b)]
    for run in runs:
        run.done.wait(30)
    for run in runs:
        run.give_back()
        run.ended.wait(30)
    raised = [run.said() for run in runs if isinstance(run.outcome, BaseException)]
    if raised:  # (a TODO raises, to be said in the skeleton's own words)
        return raised[0], False
    took = [run.outcome != "skipped" for run in runs]
    later = JobRun(grading, b, utc_at(time.time() + 1), settings, guard_class=guards)
    later.ended.wait(30)
    took_later = later.outcome != "skipped"
    yes, no = _("yes"), _("no")
    observed = _("took the guard: run A %(a)s, run B %(b)s; after it was given back, the "
                 "next fire time's run %(later)s", a=yes if took[0] else no,
                 b=yes if took[1] else no, later=yes if took_later else no)
    return observed, sum(took) == 1 and took_later


# --- the jobs on three instances ---------------------------------------------------------------

def jobs_on_three_instances(grading: Grading) -> dict:
    """The jobs fired twice on three instances under the student's guard (run once per
    grading, kept for the checks that read it): the audit before and after, the runs."""
    if grading not in _cluster_runs:
        _cluster_runs[grading] = _run_the_cluster(grading)
    return _cluster_runs[grading]


def _run_the_cluster(grading: Grading) -> dict:
    # Imported here: the launcher brings in the whole shop, which only this check needs.
    from lockshop.cluster.client import ShopClient
    from lockshop.exercises.checks.sale import StudentsCluster
    from lockshop.workshop.labs.jobs import place_unpaid_orders, run_jobs

    folder = grading.runtime / "jobs"
    folder.mkdir(parents=True, exist_ok=True)
    redis_url, strategy = _orders_lock(grading)
    config = Config(database_url=grading.database_url or f"sqlite:///{folder / 'shop.db'}",
                    redis_url=redis_url, lock_lease_ms=CLUSTER_LEASE_MS,
                    admin_token=TOKEN, strategy=strategy, job_interval_ms=0,
                    extra_guards=(f"{GUARD}={grading.spec}",), job_guard=GUARD)
    # The instances run the student's guard: as the student's user, where there is one.
    with StudentsCluster(config, instances=INSTANCES, runtime_dir=folder) as cluster:
        admin = ShopClient(cluster.urls[0], TOKEN, timeout=60)
        place_unpaid_orders(cluster.urls, admin, strategy, job_guard=GUARD)
        before = admin.audit()
        after = run_jobs(admin, fire_times=2, delay_ms=DELAY_MS)
        runs = admin.get("/api/admin/jobs")["runs"]
    return {"before": before, "after": after, "runs": runs}


def _runs_of(job: str, runs: list[dict]) -> tuple[int, int]:
    """(runs of ``job``, fire times of ``job`` that ran)."""
    mine = [run for run in runs if run["job"] == job]
    return len(mine), len({run["fire_time"] for run in mine})


def expiry_once(grading: Grading) -> tuple[str, bool]:
    from lockshop.workshop.labs.jobs import ORDERS
    seen = jobs_on_three_instances(grading)
    jobs = seen["after"]["jobs"]
    runs, fire_times = _runs_of("expire_unpaid", seen["runs"])
    observed = _("%(runs)s runs for %(fire_times)s fire times; orders expired %(expired)s of "
                 "%(orders)s; stock given back more than once: %(extra)s",
                 runs=runs, fire_times=fire_times, expired=jobs["orders_expired"],
                 orders=ORDERS, extra=jobs["stock_restored_more_than_once"])
    return observed, (runs == fire_times >= 1 and jobs["orders_expired"] == ORDERS
                      and jobs["stock_restored_more_than_once"] == 0)


def reminders_once(grading: Grading) -> tuple[str, bool]:
    from lockshop.workshop.labs.jobs import ORDERS
    seen = jobs_on_three_instances(grading)
    jobs = seen["after"]["jobs"]
    runs, fire_times = _runs_of("send_reminders", seen["runs"])
    observed = _("%(runs)s runs for %(fire_times)s fire times; reminders %(sent)s for "
                 "%(orders)s customers, duplicates %(twice)s", runs=runs,
                 fire_times=fire_times, sent=jobs["reminders"], orders=ORDERS,
                 twice=jobs["duplicate_reminders"])
    return observed, (runs == fire_times >= 1 and jobs["reminders"] == ORDERS
                      and jobs["duplicate_reminders"] == 0)


def stock_comes_back(grading: Grading) -> tuple[str, bool]:
    from lockshop.workshop.labs.jobs import STOCK
    seen = jobs_on_three_instances(grading)
    all_of_it = STOCK + 10  # the item's units and the ticket's seats
    held = seen["before"]["totals"]["remaining"]
    now = seen["after"]["totals"]["remaining"]
    observed = _("stock %(held)s of %(all)s while the orders were unpaid; %(now)s after the "
                 "jobs", held=held, all=all_of_it, now=now)
    return observed, held < all_of_it and now == all_of_it


# --- exercise 16: a run that outlives its lease ----------------------------------------------

def late_write_refused(grading: Grading) -> tuple[str, bool]:
    from lockshop.workshop.labs.jobs import ORDERS
    from shop.store.audit import take_audit

    # The cluster's job locks are gone with it; none of them may still be in Redis.
    grading.redis().flushdb()
    a, b = shop_states(grading, (SHORT_LEASE_MS, LONG_LEASE_MS))
    try:
        with student_guards(grading) as guards:
            settings = a.settings()
            a_read, a_go_on = threading.Event(), threading.Event()

            def held_in_its_delay(_seconds: float) -> None:
                a_read.set()
                a_go_on.wait(30)

            fire_a = time.time()
            run_a = JobRun(grading, a, utc_at(fire_a), settings, sleep=held_in_its_delay,
                           guard_class=guards)
            if not grading.until(lambda: a_read.is_set() or run_a.done.is_set(), seconds=15):
                return _("A's run did not read its orders"), False
            if not a_read.is_set():
                return _("A's run: %(outcome)s", outcome=run_a.said()), False
            # A is held; its lease runs out. B fires at a later fire time and tries the guard
            # once, as the scheduler does, until the lock is free.
            run_b: list[JobRun] = []

            def b_fires() -> bool:
                run = JobRun(grading, b, utc_at(fire_a + 1), settings, keep=True,
                             guard_class=guards)
                run.done.wait(30)
                if run.outcome == "skipped":
                    return False
                run_b.append(run)
                return True

            grading.until(b_fires, seconds=10 * SHORT_LEASE_MS / 1000, step=0.05)
            if not run_b:
                a_go_on.set()
                run_a.ended.wait(30)
                return _("B's run could not take the guard after A's lease of %(lease)s ms ran "
                         "out: does your guard let go of a lock it no longer holds?",
                         lease=SHORT_LEASE_MS), False
            a_go_on.set()  # B has sent, and still holds the guard: A goes on to write
            run_a.done.wait(30)
            run_b[0].give_back()
            for run in (run_a, *run_b):
                run.ended.wait(30)
            jobs = take_audit(a.sessions).jobs
    finally:
        close_states(a, b)
    observed = _("A: %(a)s; B: %(b)s; reminders %(sent)s for %(orders)s customers, "
                 "duplicates %(twice)s", a=run_a.said(),
                 b=run_b[0].said(), sent=jobs.reminders, orders=ORDERS,
                 twice=jobs.duplicate_reminders)
    return observed, (run_a.outcome == "stopped" and run_b[0].outcome == ORDERS
                      and jobs.reminders == ORDERS and jobs.duplicate_reminders == 0)


def shop_states(grading: Grading, leases_ms: tuple[int, ...]) -> list[ShopState]:
    """A shop per lease in ``leases_ms`` (A, B, ...), in the grader's process, on one new
    database (the grading's own, for a database's exercise), selling as ``_orders_lock``
    says; ORDERS unpaid orders, due for a reminder at once."""
    from lockshop.workshop.labs.jobs import ORDERS
    from shop.app import create_app
    from shop.orders.order_path import OrderRequest
    from shop.store.models import ProductKind
    from shop.store.products import ProductSpec, reset_products

    url = grading.database_url or \
        f"sqlite:///{grading.runtime / (grading.fresh_name('jobs') + '.db')}"
    redis_url, strategy = _orders_lock(grading)

    def instance(called: str, lease_ms: int) -> ShopState:
        config = Config(database_url=url, redis_url=redis_url, instance=called,
                        lock_lease_ms=lease_ms, strategy=strategy, job_interval_ms=0)
        return create_app(config).extensions["lockshop"]

    states = [instance(called, lease_ms) for called, lease_ms in zip("ABCDEF", leases_ms)]
    first = states[0]
    reset_products(first.sessions, (ProductSpec("x", "Item", ProductKind.ITEM, stock=10),))
    for _order in range(ORDERS):
        first.place_order(OrderRequest(1))
    first.change_settings(strategy=strategy, reminder_after_ms=0)
    return states


def _orders_lock(grading: Grading) -> tuple[str | None, str]:
    """The grader's Redis and the strategy the shops' unpaid orders are placed with: its
    lock, or, for a database's exercise (22), which has no Redis, none (they come one by
    one)."""
    if grading.redis_server is None:
        return None, "none"
    return grading.redis_server.url, "redis"


def close_states(*states: ShopState) -> None:
    for state in states:
        state.strategies.close()
        state.engine.dispose()


class JobRun:
    """One run of the reminder job under the student's guard, in a thread of its own, as
    the scheduler's ``fire`` makes it: the guard, ``take()``, the job with ``ensure_held``
    last in each write, ``give_back()`` (at once, or when told, with ``keep``)."""

    def __init__(self, grading: Grading, state: ShopState, fire_time, settings, *,
                 sleep=time.sleep, keep: bool = False,
                 start: threading.Barrier | None = None, guard_class: type | None = None
                 ) -> None:
        self.outcome: int | str | BaseException = "running"
        self.done = threading.Event()  # the job's work is over (or was never begun)
        self.ended = threading.Event()  # and its guard given back: the thread is gone
        self._release = threading.Event()
        self._keep = keep
        self._start = start
        self._guard_class = guard_class or grading.lock_class  # the student's, by default
        args = (grading, state, fire_time, settings, sleep)
        threading.Thread(target=self._run_to_the_end, args=args, daemon=True,
                         name="job run").start()

    def _run_to_the_end(self, *args) -> None:
        try:
            self._run(*args)
        finally:
            self.done.set()
            self.ended.set()

    def _run(self, grading: Grading, state: ShopState, fire_time, settings, sleep) -> None:
        from shop.jobs.tasks import JobContext, send_reminders
        try:
            guard = self._guard_class(state, JOB, fire_time, settings, time.time)
            if self._start is not None:
                self._start.wait(10)
            if not guard.take():
                self.outcome = "skipped"
                return
        except BaseException as error:  # noqa: BLE001 - the student's guard may raise anything
            self.outcome = error
            return
        finally:
            if self.outcome != "running":
                self.done.set()
        context = JobContext(state.config.instance, fire_time=fire_time, now=utc_at(time.time()),
                             business_delay_ms=1, still_ours=guard.ensure_held,
                             exclude_orders=lambda product: nullcontext(), sleep=sleep)
        try:
            self.outcome = send_reminders(state.engine, context, 0)
        except LockLost:
            self.outcome = "stopped"
        except BaseException as error:  # noqa: BLE001 - the student's ensure_held too
            self.outcome = error
        self.done.set()
        if self._keep:
            self._release.wait(30)
        try:
            guard.give_back()
        except Exception:  # noqa: BLE001 - a lock lost has nothing to give back; a TODO
            pass  # shows in the outcome; what else give_back says is not this check's

    def give_back(self) -> None:
        self._release.set()

    def said(self) -> str:
        if self.outcome == "skipped":
            return _("skipped: take() said False")
        if self.outcome == "stopped":
            return _("stopped before writing: its guard was gone")
        if isinstance(self.outcome, int):
            return _("sent %(count)s", count=self.outcome)
        if isinstance(self.outcome, NotImplementedError):
            raise self.outcome  # the skeleton's TODO: the grader says it in its own words
        if isinstance(self.outcome, BaseException):
            return _("your guard raised %(error)s: %(message)s",
                     error=type(self.outcome).__name__, message=self.outcome)
        return str(self.outcome)


ONCE = (
    Check("C04",
          lazy_gettext("two runs of one fire time on two shops at once, then a run of the next "
                       "fire time"),
          lazy_gettext("one of the two takes the guard, the other skips; once it is given "
                       "back, the next fire time's run takes it"),
          lazy_gettext("take() must try the job's lock once, without waiting, and say whether "
                       "it got it (True for one run only); give_back() must release it."),
          one_run_takes_it),
    Check("C04",
          lazy_gettext("%(instances)s shop instances fire the expiry job at the same times, "
                       "%(delay)s ms between its read and its writes, your guard around each "
                       "run", instances=INSTANCES, delay=DELAY_MS),
          lazy_gettext("one run per fire time in the cluster: every unpaid order expired, its "
                       "stock given back once"),
          lazy_gettext("take() must say True on one instance only per fire time: try a lock "
                       "that lives outside the process (a key in Redis, not a threading.Lock), "
                       "named for the job, once, without waiting; and hold it until "
                       "give_back(), after the run, not just while take() runs."),
          expiry_once, sale=True),
    Check("C05",
          lazy_gettext("the same %(instances)s instances fire the reminder job at the same "
                       "times", instances=INSTANCES),
          lazy_gettext("one reminder per customer who has not paid"),
          lazy_gettext("Each instance that takes the guard at the same fire time sends every "
                       "reminder again: give the job one lock for the whole cluster, tried "
                       "once per fire time, and skip the fire time when it is held."),
          reminders_once, sale=True),
    Check("C42",
          lazy_gettext("stock taken by unpaid orders comes back only when the expiry job "
                       "gives it back"),
          lazy_gettext("the stock reads less while the orders are unpaid, and all of it after "
                       "the jobs: given back once, no more, no less"),
          lazy_gettext("The stock must come back exactly once: if it came back more than "
                       "once, two instances ran the job for one fire time; if it never came "
                       "back, your take() said False everywhere (or give_back() never let go "
                       "of the lock, and later fire times skipped)."),
          stock_comes_back, sale=True),
)

RECHECK = (
    Check("C35",
          lazy_gettext("run A takes the guard, reads its orders and is held past its %(lease)s "
                       "ms lease; run B, at a later fire time, takes the guard and sends; then "
                       "A goes on to write", lease=SHORT_LEASE_MS),
          lazy_gettext("B sends; A finds its lock gone before its first write and stops: one "
                       "reminder per customer"),
          lazy_gettext("A check when the run starts says nothing about the moment of the "
                       "write: in ensure_held(db), ask the lock whether it is still held "
                       "(self.lock.ensure_held() raises LockLost when it is not) and let "
                       "LockLost go up; the job then rolls the write back and stops."),
          late_write_refused),
)
