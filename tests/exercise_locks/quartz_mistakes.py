"""Exercise 22's mistakes: each guard is the student's solution but for one thing, and
the grader must name lesson C41."""

from __future__ import annotations

from sqlalchemy import text

from shop.jobs.guards import RowLockGuard, make_lock_row

READ = "SELECT fire_time, locked_until FROM job_locks WHERE job = :job"
CLAIM = ("UPDATE job_locks SET fire_time = :fire_time, locked_until = :until, instance = :me "
         "WHERE job = :job")


class _Guard(RowLockGuard):
    """The reference's hold, fence and give-back; each mistake's own take()."""

    def _ran(self, row) -> bool:
        claimed, held_until = row
        return claimed >= self.fire_time or held_until > self.now()

    def _claim(self, db) -> None:
        db.execute(text(CLAIM), {"fire_time": self.fire_time, "until": self.held_until(),
                                 "me": self.instance, "job": self.job})


class ReadsWithoutLock(_Guard):
    """Reads the row with a plain SELECT: every scheduler reads "not run" (C41)."""

    def take(self) -> bool:
        make_lock_row(self.state.engine, self.job)
        with self.state.engine.begin() as db:
            if self._ran(db.execute(text(READ), {"job": self.job}).one()):
                return False
            self.deciding()
            self._claim(db)
        return True


class ClaimsInAnotherTransaction(_Guard):
    """Locks the row to read, but commits before it decides: the lock is gone before the
    claim is written, and the next scheduler reads the old fire time too (C41, as C40)."""

    def take(self) -> bool:
        make_lock_row(self.state.engine, self.job)
        with self.state.engine.begin() as db:
            row = db.execute(text(READ + " FOR UPDATE"), {"job": self.job}).one()
        if self._ran(row):
            return False
        self.deciding()
        with self.state.engine.begin() as db:
            self._claim(db)
        return True


class ClaimsWithoutLooking(_Guard):
    """Takes the row lock, and claims without reading what it holds: the schedulers take
    turns, and each runs (C41)."""

    def take(self) -> bool:
        make_lock_row(self.state.engine, self.job)
        with self.state.engine.begin() as db:
            db.execute(text(READ + " FOR UPDATE"), {"job": self.job})
            self.deciding()
            self._claim(db)
        return True
