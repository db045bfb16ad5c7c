"""Exercise 22's mistakes: each guard is the student's solution but for one thing, and
the grader must name lesson C41."""

from __future__ import annotations

from sqlalchemy import text

from shop.jobs.guards import JobGuard, RowLockGuard, make_lock_row

READ = "SELECT fire_time FROM job_locks WHERE job = :job"
CLAIM = "UPDATE job_locks SET fire_time = :fire_time, instance = :me WHERE job = :job"


class _Guard(JobGuard):
    name = "exercise"

    def __init__(self, state, job, fire_time, settings, clock) -> None:
        self.engine = state.engine
        self.job, self.fire_time = job, fire_time
        self.instance = state.config.instance
        self.deciding_s = settings.business_delay_ms / 1000

    deciding = RowLockGuard.deciding
    ensure_held = RowLockGuard.ensure_held

    def _claim(self, db) -> None:
        db.execute(text(CLAIM), {"fire_time": self.fire_time, "me": self.instance,
                                 "job": self.job})


class ReadsWithoutLock(_Guard):
    """Reads the row with a plain SELECT: every scheduler reads "not run" (C41)."""

    def take(self) -> bool:
        make_lock_row(self.engine, self.job)
        with self.engine.begin() as db:
            if db.execute(text(READ), {"job": self.job}).scalar() >= self.fire_time:
                return False
            self.deciding()
            self._claim(db)
        return True


class ClaimsInAnotherTransaction(_Guard):
    """Locks the row to read, but commits before it decides: the lock is gone before the
    claim is written, and the next scheduler reads the old fire time too (C41, as C40)."""

    def take(self) -> bool:
        make_lock_row(self.engine, self.job)
        with self.engine.begin() as db:
            last = db.execute(text(READ + " FOR UPDATE"), {"job": self.job}).scalar()
        if last >= self.fire_time:
            return False
        self.deciding()
        with self.engine.begin() as db:
            self._claim(db)
        return True


class ClaimsWithoutLooking(_Guard):
    """Takes the row lock, and claims without reading the fire time: the schedulers take
    turns, and each runs (C41)."""

    def take(self) -> bool:
        make_lock_row(self.engine, self.job)
        with self.engine.begin() as db:
            db.execute(text(READ + " FOR UPDATE"), {"job": self.job})
            self.deciding()
            self._claim(db)
        return True
