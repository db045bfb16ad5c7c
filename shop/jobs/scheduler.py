"""The job scheduler: every instance fires every job at every slot of the schedule.

Fire times are the multiples of the interval on the wall clock, so that all
instances agree on them (an instance whose clock is late agrees late). At each
fire time, each instance runs each job under its **guard**, ShedLock's way:

* **skip, don't queue**: the guard is tried once, without waiting. If another
  instance holds it, this instance skips the fire time: the job is being
  done, and doing it again later would be doing it twice;
* **hold at least** (``job_lock_at_least_ms``, half the interval unless set):
  a quick job keeps its lock until that long after its fire time, so that an
  instance whose clock is a little late, and fires a little later, finds the
  lock still held instead of running the same fire time again. An instance
  that only gets the guard after that window (or half the interval, if
  longer) skips the fire time: it is too late to tell whether it ran;
* **hold at most** (the lock's lease, ``LOCKSHOP_LOCK_LEASE_MS``): a job that
  runs longer than that counts its lock as lost and stops before its next
  write, as a lease-based lock may have expired by then.

The guards themselves (a lock, a row in ``job_locks``, leadership) are in
``shop.jobs.guards``.

Every run that is not skipped is recorded in ``job_runs``; the audit counts
fire times run more than once, stock restored more than once, and duplicate
reminders.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime

from sqlalchemy import Connection, update

from locks import LockError, LockLost
from shop.jobs.clock import Clock, SystemClock
from shop.jobs.guards import JobGuard
from shop.jobs.tasks import JOBS, JobContext
from shop.orders.order_path import OrderContext
from shop.store.models import JobRun, utc_at
from shop.store.settings import ClusterSettings

log = logging.getLogger(__name__)

#: How often the scheduler looks at the clock (and at the settings).
TICK_S = 0.05
#: A fire time that began this recently when the jobs were switched on still fires:
#: instances that notice the switch on either side of a fire time agree on it.
JUST_BEGUN_MS = 250


class JobScheduler:
    """A background thread that fires the jobs of one instance."""

    def __init__(self, state, clock: Clock | None = None) -> None:
        self.state = state
        self._skew_s = state.config.clock_skew_ms / 1000
        self._clock = clock or SystemClock()
        self._last_slot: dict[str, int] = {}
        self._interval = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lockshop-jobs", daemon=True)

    def start(self) -> JobScheduler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def now(self) -> float:
        """This instance's clock, in seconds: the machine's, plus its configured skew."""
        return self._clock.now() + self._skew_s

    def wait_until(self, moment: float) -> None:
        """Sleep until this instance's clock reads ``moment`` (or the scheduler stops)."""
        self._clock.wait_until(moment - self._skew_s, self._stop)

    def _loop(self) -> None:
        while not self._stop.wait(TICK_S):
            try:
                self._tick()
            except Exception:  # a database hiccup must not kill the scheduler
                log.exception("job scheduler tick failed")

    def _tick(self) -> None:
        settings = self.state.settings()
        if settings.job_guard == "leader":
            self._stand_for_election()
        interval = settings.job_interval_ms
        if interval != self._interval:  # switched on, off, or to another schedule
            self._interval, self._last_slot = interval, {}
        if interval <= 0:
            return
        now_ms = int(self.now() * 1000)
        slot = now_ms - now_ms % interval
        for job in JOBS:
            if self._last_slot.get(job) is None:
                # Start with the next fire time, or this one if it has just begun.
                just_begun = now_ms - slot < JUST_BEGUN_MS
                self._last_slot[job] = slot - interval if just_begun else slot
            if slot > self._last_slot[job]:
                self._last_slot[job] = slot
                fire_time = utc_at(slot / 1000)
                threading.Thread(target=self.fire, args=(job, fire_time, settings),
                                 name=f"job-{job}", daemon=True).start()

    def _stand_for_election(self) -> None:
        """Join the election as soon as the guard is the leader, not at the first fire
        time: an election takes a moment, and a fire time with no leader yet is lost."""
        try:
            self.state.leader_election()
        except Exception as error:  # no ZooKeeper configured: fire() will say so
            log.debug("cannot stand for election: %s", error)

    def fire(self, job: str, fire_time: datetime, settings: ClusterSettings) -> str:
        """Run ``job`` for ``fire_time`` under its guard; return "done", "skipped" or "lost"."""
        try:
            guard = JobGuard.for_settings(self.state, job, fire_time, settings, self.now)
        except Exception as error:  # e.g. leader election with no ZooKeeper configured
            log.warning("%s at %s: skipped, no guard to be had: %s", job, fire_time, error)
            return "skipped"
        started = time.monotonic()
        if not guard.take():
            log.debug("%s at %s: skipped, %s holds it elsewhere", job, fire_time, guard.name)
            return "skipped"
        # Both bounds count from the fire time, not from when we got the guard:
        # an instance whose attempt was slow (a busy database, a slow backend)
        # must not find the guard free only because the first runner's minimum
        # hold ran out before it even asked.
        fire_s = fire_time.replace(tzinfo=UTC).timestamp()
        hold_at_least_s = settings.job_hold_at_least_ms / 1000
        try:
            late_s = self.now() - fire_s
            if late_s > max(hold_at_least_s, settings.job_interval_ms / 2000):
                # A warning, not a note: a fire time every instance skips is a fire time
                # the cluster lost, and an overloaded machine is the usual cause.
                log.warning("%s at %s: skipped, the guard came %.0f ms after the fire time",
                            job, fire_time, late_s * 1000)
                return "skipped"
            return self._run(job, fire_time, settings, guard, started)
        finally:
            # Hold at least until the fire time's minimum hold is over.
            self.wait_until(fire_s + hold_at_least_s)
            guard.give_back()

    def _run(self, job: str, fire_time: datetime, settings: ClusterSettings,
             guard: JobGuard, started: float) -> str:
        sessions = self.state.sessions
        with sessions.begin() as session:
            run = JobRun(job=job, fire_time=fire_time, instance=self.state.config.instance,
                         guard=guard.name)
            session.add(run)
            session.flush()
            run_id = run.id
        at_most_s = self.state.config.lock_lease_ms / 1000

        def still_ours(db: Connection) -> None:
            if time.monotonic() - started > at_most_s:
                raise LockLost(f"job:{job}", "the job ran longer than its lock may be held")
            guard.ensure_held(db)

        config = self.state.config
        order_context = OrderContext(instance=config.instance, strategy=settings.strategy,
                                     business_delay_ms=0,
                                     lock_timeout_ms=config.lock_timeout_ms)
        context = JobContext(instance=config.instance, fire_time=fire_time,
                             now=utc_at(self.now()),
                             business_delay_ms=settings.business_delay_ms,
                             still_ours=still_ours,
                             exclude_orders=lambda product_id: self.state.strategies.excluding_orders(
                                 settings.strategy, product_id, order_context))
        outcome, handled = "done", 0
        try:
            handled = JOBS[job](self.state.engine, context, settings)
        except LockError as error:
            outcome = "lost"
            log.warning("%s at %s stopped before writing: %s", job, fire_time, error)
        with sessions.begin() as session:
            session.execute(update(JobRun).where(JobRun.id == run_id)
                            .values(outcome=outcome, handled=handled))
        return outcome
