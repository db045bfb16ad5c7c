"""What guards a job's run, so that a fire time runs once in the cluster.

* ``strategy`` (the default): the current strategy. A lock strategy guards
  the job with its lock named ``job:<job>`` (``LockGuard``); a transaction
  strategy with the job's row in ``job_locks``, taken by a conditional UPDATE
  (``TableGuard``, ShedLock's JDBC provider). ``none`` guards nothing: every
  instance runs every fire time.
* ``leader``: ZooKeeper leader election (``locks.zk_election``): only the
  leader runs jobs; when it dies, another instance is elected.
* a name from ``Config.extra_guards``: a guard class plugged in from a file
  (``shop.jobs.custom``), made as ``Class(state, job, fire_time, settings, clock)``.

A check before a write cannot see a delay after it: a pause, or a slow link
before the commit, lets the guard's lease run out and the next fire time's
run read the same orders. So the job calls ``ensure_held(db)`` last in each
write's transaction, and a guard that can be fenced is fenced there, in the
database the job writes to, as an order's stock is by its lock's token:

* the ``job_locks`` row by its fire time;
* a lock by its fencing token, handed to the job's row in ``job_fences``
  before the run reads anything.

That check is a write: it locks the row until the job's commit, so a later
run that comes to take the row or hand in its token waits for that commit,
then reads what was written; one that came first has changed the row, and
the late write is not made. A lock without a token (Redlock) can only be
checked, not fenced.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime

from sqlalchemy import Connection, Engine, Update, insert, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from locks import DistributedLock, LockError, LockLost
from shop.store.db import begin_writing
from shop.store.models import JobFence, JobLock, utc_at
from shop.store.settings import ClusterSettings

log = logging.getLogger(__name__)


#: Guard classes plugged in from files, by the name the setting ``job_guard`` gives them
#: (``shop.jobs.custom.register_guard`` adds them).
PLUGGED_IN: dict[str, type[JobGuard]] = {}


class JobGuard:
    """What a job holds while it runs: a lock, its row in job_locks, leadership, or nothing."""

    name = "none"

    @staticmethod
    def for_settings(state, job: str, fire_time: datetime, settings: ClusterSettings,
                     clock: Callable[[], float]) -> JobGuard:
        if settings.job_guard == "leader":
            return LeaderGuard(state.leader_election())
        guard_class = PLUGGED_IN.get(settings.job_guard)
        if guard_class is not None:
            return guard_class(state, job, fire_time, settings, clock)
        factory = state.strategies.lock_factory(settings.strategy)
        if factory is None:
            return TableGuard(state, job, fire_time, settings.strategy, clock)
        # Counted apart from the order locks: a job's lock is held for half an
        # interval, and would swamp the hold times of the sale's locks.
        lock = factory.lock(f"job:{job}", timeout=0, label=f"{settings.strategy} (jobs)")
        return LockGuard(state, job, lock, settings.strategy)

    def take(self) -> bool:
        return True

    def ensure_held(self, db: Connection) -> None:
        """Raise ``LockLost`` unless the guard is still held; ``db`` is the transaction
        of the write about to be committed."""

    def give_back(self) -> None:
        pass


class LockGuard(JobGuard):
    """The strategy's lock, tried once: held elsewhere means skip. Fenced by its token."""

    def __init__(self, state, job: str, lock: DistributedLock, strategy: str) -> None:
        self.state, self.job, self.lock, self.name = state, job, lock, strategy

    def take(self) -> bool:
        try:
            if not self.lock.acquire(blocking=False):
                return False
        except LockError as error:  # its backend is down: safer to skip than to run unguarded
            log.warning("job lock unavailable, skipping: %s", error)
            return False
        try:
            if self.lock.fencing_token is None or self._hand_in_token():
                return True
            log.warning("%s: a newer token was handed in already; skipping", self.lock.name)
        except DBAPIError as error:  # the database is down: the run could not write anyway
            log.warning("%s: cannot hand in the token, skipping: %s", self.lock.name, error)
        self.give_back()
        return False

    def _hand_in_token(self) -> bool:
        """Before the run reads: make our token the job's newest, so that a run that
        held the lock before us can no longer commit a write. False if a newer one is
        there already (ours is the older hold)."""
        token = self.lock.fencing_token
        return _claim_row(self.state.sessions, JobFence, self.job,
                          update(JobFence).where(JobFence.token < token).values(token=token),
                          JobFence(job=self.job, token=token))

    def ensure_held(self, db: Connection) -> None:
        self.lock.ensure_held()
        token = self.lock.fencing_token
        if token is not None:
            _hold_row(db, JobFence, self.job, JobFence.token == token, self.lock.name,
                      "a later holder has handed in a newer fencing token")

    def give_back(self) -> None:
        with suppress(LockError):  # a lost lock has nothing to give back
            self.lock.release()


class TableGuard(JobGuard):
    """A transaction strategy's guard: the job's row in ``job_locks``, ShedLock's way.

    Taken only when free and only for a later fire time than the last; held
    until given back, and at most for the lease. A run that outlives the lease
    stops before its next write (``still_ours``), as under a lock's lease.

    The row's fire time is also the run's fencing token: each of the run's
    writes commits only if the row still names its fire time (``ensure_held``).
    """

    def __init__(self, state, job: str, fire_time: datetime, strategy: str,
                 clock: Callable[[], float]) -> None:
        self.state, self.job, self.fire_time, self.name = state, job, fire_time, strategy
        self.instance = state.config.instance
        self._clock = clock
        self._lease_s = state.config.lock_lease_ms / 1000

    def take(self) -> bool:
        """False when the row is held, or this fire time (or a later one) was taken."""
        now, until = self.now(), self.held_until()
        return _claim_row(self.state.sessions, JobLock, self.job,
                          update(JobLock)
                          .where(JobLock.locked_until <= now, JobLock.fire_time < self.fire_time)
                          .values(fire_time=self.fire_time, locked_until=until,
                                  instance=self.instance),
                          JobLock(job=self.job, fire_time=self.fire_time, locked_until=until,
                                  instance=self.instance))

    def now(self) -> datetime:
        """The time now, as the table keeps it."""
        return utc_at(self._clock())

    def held_until(self) -> datetime:
        """Until when a claim made now holds the job, at most: the lease."""
        return utc_at(self._clock() + self._lease_s)

    def ensure_held(self, db: Connection) -> None:
        _hold_row(db, JobLock, self.job, self._ours, f"job:{self.job}",
                  "a later fire time has taken the job's row")

    def give_back(self) -> None:
        with self.state.sessions.begin() as session:
            session.execute(update(JobLock).where(JobLock.job == self.job, self._ours)
                            .values(locked_until=self.now()))

    @property
    def _ours(self):
        return (JobLock.fire_time == self.fire_time) & (JobLock.instance == self.instance)


class RowLockGuard(TableGuard):
    """Quartz's clustered JobStore: one scheduler at a time decides, through a row lock.

    Article A1 ("想办法"): Quartz keeps a cluster's schedulers from firing a trigger
    twice with the database's own lock. Before it decides whether a fire time has run,
    a scheduler takes ``SELECT ... FOR UPDATE`` on a row of its lock table, and holds it
    until its decision is committed. Here the row is the job's in ``job_locks``:

        1. BEGIN; SELECT fire_time, locked_until FROM job_locks WHERE job = :job
           FOR UPDATE (InnoDB locks the row, found through its primary key: every other
           scheduler's same SELECT waits here until we commit)
        2. if the row names this fire time or a later one, or a run still holds the job
           (its locked_until is ahead): COMMIT, and skip
        3. UPDATE job_locks SET fire_time = :ours, locked_until = :until, instance = :me;
           COMMIT (the commit lets the next scheduler in, to read our claim and skip)

    The row must exist before anyone locks it: ``FOR UPDATE`` on a row that is not there
    locks a gap, and gap locks do not exclude one another (Quartz inserts its lock rows
    when it starts; ``make_lock_row`` does it here). Without ``FOR UPDATE`` every
    scheduler reads the old fire time, and each runs the job (lesson C41).

    The row lock lasts as long as its transaction, which ends with the decision; the
    claim then holds the job, as Quartz's blocked trigger does for a job that must not
    run twice at once, until ``give_back`` or at most the lease, and fences the run's
    writes: ``TableGuard``'s, which takes the same row with one conditional UPDATE
    instead. Made as a guard plugged in by name is (``shop.jobs.custom``); exercise 22
    grades it.
    """

    #: How long deciding takes, between the read and the write: nothing in the shop; a
    #: grader's check holds each scheduler there, to open the window a lock must close.
    deciding_s = 0.0

    def __init__(self, state, job: str, fire_time: datetime, settings: ClusterSettings,
                 clock: Callable[[], float]) -> None:
        super().__init__(state, job, fire_time, "row lock", clock)

    def take(self) -> bool:
        make_lock_row(self.state.engine, self.job)
        with self.state.engine.begin() as db:
            # 1. the row lock, and the read that decides, in one transaction
            last, held_until = db.execute(
                select(JobLock.fire_time, JobLock.locked_until)
                .where(JobLock.job == self.job).with_for_update()).one()
            # 2. this fire time, or a later one, has run, or a run still holds the job
            if last >= self.fire_time or held_until > self.now():
                return False
            self.deciding()
            # 3. claim the fire time; the commit, at the end of the block, lets go of the row
            db.execute(update(JobLock).where(JobLock.job == self.job)
                       .values(fire_time=self.fire_time, locked_until=self.held_until(),
                               instance=self.instance))
        return True

    def deciding(self) -> None:
        """Deciding, between the read and the write: the window every other scheduler's
        read would fall into, unlocked."""
        time.sleep(self.deciding_s)


def make_lock_row(engine: Engine, job: str) -> None:
    """The job's row in ``job_locks``, inserted once (by whichever scheduler comes first),
    naming no fire time yet."""
    never = utc_at(0)
    with suppress(IntegrityError), engine.begin() as db:
        if db.scalar(select(JobLock.job).where(JobLock.job == job)) is None:
            db.execute(insert(JobLock).values(job=job, fire_time=never, locked_until=never,
                                              instance=""))


class LeaderGuard(JobGuard):
    """Only the elected leader runs jobs."""

    name = "leader"

    def __init__(self, election) -> None:
        self.election = election

    def take(self) -> bool:
        return self.election.is_leader()

    def ensure_held(self, db: Connection) -> None:
        self.election.ensure_leader()


# --- the job's row: claimed by one conditional UPDATE, held by another ---------------

def _claim_row(sessions, table, job: str, claim: Update, first: object) -> bool:
    """Claim ``job``'s row in ``table`` with ``claim`` (an UPDATE whose WHERE says when it
    may be claimed), or insert ``first`` where the job has no row yet. False when the
    row is there and may not be claimed, or another instance made it first."""
    try:
        with sessions.begin() as session:
            begin_writing(session)
            if session.execute(claim.where(table.job == job)).rowcount:
                return True
            if session.get(table, job) is not None:
                return False
            session.add(first)
        return True
    except IntegrityError:
        return False


def _hold_row(db: Connection, table, job: str, ours, lock_name: str, why: str) -> None:
    """In the job's write transaction ``db``: raise ``LockLost`` unless ``job``'s row still
    matches ``ours``. A write, not a read: it locks the row until the commit, so a run
    that comes to claim the row meanwhile waits for the commit, then reads what we
    wrote; one that claimed it before has changed the row, and we write nothing."""
    still = db.execute(update(table).where(table.job == job, ours).values(job=job))
    if not still.rowcount:
        raise LockLost(lock_name, why)

