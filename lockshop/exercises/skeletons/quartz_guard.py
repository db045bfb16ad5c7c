"""Exercise 22: a job guard as Quartz makes one, with SELECT ... FOR UPDATE on a lock row.

Article A1 ("想办法"): Quartz keeps a cluster's schedulers in step with the
database's own lock. Before a scheduler decides whether a fire time has run, it
takes SELECT ... FOR UPDATE on a row of its lock table, and keeps it until its
decision is committed: the other schedulers' same SELECT waits, then reads the
decision. Without the row lock, every scheduler reads "not run yet", and each
runs the job (lesson C41).

The lock row here is the job's row in the table job_locks (one per job): its
fire_time says which fire time was claimed last, and its locked_until until when
that claim holds the job (a run still going on). Every shop instance fires the
same jobs at the same wall-clock times; at each fire time, on each instance, the
scheduler makes a guard and calls take() once: True runs the job now, False
skips this fire time (another instance has it). After the run it calls
give_back(), which ends the hold. Complete take().

Check it:   ./run exercise check 22 quartz_guard.py
(the grader makes a MariaDB database of its own: three schedulers reach one fire
time at once, then three shop instances fire the jobs with your guard plugged in)

What you may use:
    with self.engine.begin() as db:   one transaction, as a "with" block: it
                                      commits at the end of the block (rolls back
                                      on an error), and so lets go of its row locks
    db.execute(text("SELECT ... WHERE job = :job ..."), {"job": ...}).scalar()
    the table:  job_locks (job VARCHAR(64) PRIMARY KEY, fire_time DATETIME(6),
                           locked_until DATETIME(6), instance VARCHAR(100))
    self.job        the job's name: "expire_unpaid" or "send_reminders"
    self.fire_time  this run's fire time (a datetime, the same on every instance)
    self.instance   this shop instance's name
    self.now()      the time now, as the table keeps it
    self.held_until() until when a claim made now holds the job (the lease)
    self.deciding() the slow part between the read and the write: in its check the
                    grader holds schedulers here, keep it there
The job's row is there before take() reads it (make_lock_row, already called);
give_back() and ensure_held() are given (TableGuard's: the claim fences the run).
"""

import time

from sqlalchemy import text  # noqa: F401 - for take()

from shop.jobs.guards import TableGuard, make_lock_row


class QuartzGuard(TableGuard):
    """One run per fire time in the cluster: the decision taken under the job's row lock."""

    name = "exercise"
    #: How long deciding() takes: nothing in the shop; the grader sets it for its check.
    deciding_s = 0.0

    def __init__(self, state, job, fire_time, settings, clock) -> None:
        super().__init__(state, job, fire_time, "exercise", clock)
        self.engine = state.engine

    def take(self) -> bool:
        """True when this instance runs this fire time; False to skip it."""
        make_lock_row(self.engine, self.job)
        # TODO 1 (A1; C41): in ONE transaction (with self.engine.begin() as db:), in
        # this order:
        #   read the row's fire_time and locked_until with SELECT ... FOR UPDATE
        #   (through its primary key)
        #   if fire_time is this fire time or a later one (it was claimed), or
        #   locked_until is after self.now() (a run still holds the job): return False
        #   self.deciding()
        #   UPDATE the row: fire_time = this fire time, locked_until = self.held_until(),
        #   instance = this instance
        #   return True
        # The commit, at the end of the block, is what lets the next scheduler in.
        raise NotImplementedError("TODO 1: SELECT fire_time FROM job_locks WHERE job = :job "
                                  "FOR UPDATE, decide, UPDATE, in one transaction")

    def deciding(self) -> None:
        """Deciding, between the read and the write: the grader's window."""
        time.sleep(self.deciding_s)
