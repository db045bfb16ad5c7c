"""Exercise 15: a job guard, so that a scheduled job runs once in the cluster.

Articles A0 (the cleanup job that gives an expired order's stock back) and A1
(eight Tomcats, eight text messages): every shop instance runs a scheduler,
and every scheduler fires the same jobs at the same wall-clock times. Each
run reads the unpaid orders, works on them for a while, then writes. With
nothing to guard the runs, three instances read the same orders and all
three write: each order's stock comes back three times (lesson C04), each
customer who has not paid gets three reminders (C05). The expiry job is what
gives back the stock that unpaid orders hold (C42): it must give it back
once, no more, no less.

The scheduler holds a guard around each run. At each fire time, on each
instance, it makes a guard, calls take() once, without waiting: True runs
the job now, False skips this fire time (another instance has it). After the
run, and not before half the interval since the fire time, it calls
give_back(). Complete take() and give_back().

Check it:   ./run exercise check 15 job_guard.py
(three shop instances fire the two jobs twice with your guard plugged in;
the shop's audit counts the stock given back and the reminders sent)

What you may use (set up in __init__ below):
    self.job        the job's name: "expire_unpaid" or "send_reminders"
    self.fire_time  this run's fire time (a datetime, the same on every instance)
    self.strategies the shop's locks: self.strategies.lock_factory("redis")
                    makes Redis locks (the grader's Redis), lock_factory("local")
                    locks in this process's memory; factory.lock(name, timeout=0)
                    is a lock on name; lock.acquire(blocking=False) tries it once
                    (True if it is now yours), lock.release() gives it back
LockError (from locks import LockError) is what a lock raises when its
server cannot be reached, or when it was no longer yours at its release.
"""

from locks import LockError  # noqa: F401 - for give_back
from shop.jobs.guards import JobGuard


class JobLockGuard(JobGuard):
    """One run per fire time in the cluster: the job's lock, tried once."""

    name = "exercise"

    def __init__(self, state, job, fire_time, settings, clock) -> None:
        self.job = job
        self.fire_time = fire_time
        self.strategies = state.strategies
        self.lock = None

    def take(self) -> bool:
        """True when this instance runs this fire time; False to skip it."""
        # TODO 1: make the job's lock in self.lock: one lock for the whole cluster
        # (where does it live?), named for the job; try it once, without waiting,
        # and return whether you got it.
        raise NotImplementedError("TODO 1: make the job's lock and try it once")

    def give_back(self) -> None:
        """After the run (also after a run that failed): let the next fire time have it."""
        # TODO 2: release self.lock. A lock whose lease ran out during the run is no
        # longer yours: there is nothing to give back (release raises LockError).
        raise NotImplementedError("TODO 2: release the job's lock")
