"""Exercise 16: a job guard that checks again, before each write, that it still holds its lock.

Article A2: a job's lock has a lease, so that a dead instance does not keep it
for ever. A run that takes longer than the lease (a slow payment provider, a
long GC pause) goes on working after its lock has expired; the next fire time,
on another instance, takes the lock and does the same work. When the first run
then writes, the work is done twice: every customer who has not paid gets two
reminders (lesson C35). A check when the run starts says nothing about the
moment of the write.

The scheduler calls your guard's ensure_held(db) last in each of the job's
write transactions (db is that transaction): it must raise LockLost when the
guard is no longer held; the job then rolls that write back and stops. Write
take() and give_back() as in exercise 15, then ensure_held().

Check it:   ./run exercise check 16 rechecked_guard.py
(it runs the checks of exercise 15 too)

What you may use (set up in __init__ below):
    self.job        the job's name: "expire_unpaid" or "send_reminders"
    self.fire_time  this run's fire time (a datetime, the same on every instance)
    self.strategies the shop's locks: self.strategies.lock_factory("redis")
                    makes Redis locks (the grader's Redis); factory.lock(name,
                    timeout=0) is a lock on name; lock.acquire(blocking=False)
                    tries it once, lock.release() gives it back, and
                    lock.ensure_held() raises LockLost unless the lock is still
                    yours (it asks Redis whether the key still holds your token)
LockLost and LockError: from locks import LockError, LockLost.
"""

from locks import LockError, LockLost  # noqa: F401 - for give_back and ensure_held
from shop.jobs.guards import JobGuard


class RecheckedGuard(JobGuard):
    """One run per fire time in the cluster, and no write after its lock is gone."""

    name = "exercise"

    def __init__(self, state, job, fire_time, settings, clock) -> None:
        self.job = job
        self.fire_time = fire_time
        self.strategies = state.strategies
        self.lock = None

    def take(self) -> bool:
        """True when this instance runs this fire time; False to skip it."""
        # TODO 1: as in exercise 15: the job's lock, one for the cluster, tried once.
        raise NotImplementedError("TODO 1: make the job's lock and try it once")

    def ensure_held(self, db) -> None:
        """Just before each write commits: raise LockLost unless the lock is still ours."""
        # TODO 3: ask the lock itself, now, not what take() found then.
        raise NotImplementedError("TODO 3: raise LockLost unless the job's lock is still held")

    def give_back(self) -> None:
        """After the run (also after a run that failed): let the next fire time have it."""
        # TODO 2: as in exercise 15: release self.lock; a lost lock has nothing to give back.
        raise NotImplementedError("TODO 2: release the job's lock")
