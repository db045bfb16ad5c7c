"""Job guards for exercises 15 and 16: a student's right answer, and the mistakes the
grader must catch (each on the lesson it breaks)."""

from dataclasses import replace

from locks import LockError
from shop.jobs.custom import StrategyLockGuard
from shop.jobs.guards import JobGuard


class RedisJobGuard(JobGuard):
    """Exercise 16's skeleton, written as a student would: right for 15 and 16."""

    name = "exercise"

    def __init__(self, state, job, fire_time, settings, clock) -> None:
        self.job = job
        self.fire_time = fire_time
        self.strategies = state.strategies
        self.lock = None

    def take(self) -> bool:
        self.lock = self.strategies.lock_factory("redis").lock(f"job:{self.job}", timeout=0)
        return self.lock.acquire(blocking=False)

    def ensure_held(self, db) -> None:
        self.lock.ensure_held()

    def give_back(self) -> None:
        try:
            self.lock.release()
        except LockError:
            pass


class NoGuard(RedisJobGuard):
    """Guards nothing: every instance runs every fire time (C04, C05)."""

    def take(self) -> bool:
        return True

    def ensure_held(self, db) -> None:
        pass

    def give_back(self) -> None:
        pass


class LocalLockGuard(StrategyLockGuard):
    """The project's LockGuard on the strategy 'local': a lock in each process's memory,
    which keeps out only its own threads (C04)."""

    def __init__(self, state, job, fire_time, settings, clock) -> None:
        super().__init__(state, job, fire_time, replace(settings, strategy="local"), clock)


class GivesBackAtOnce(RedisJobGuard):
    """Holds the lock only while take() runs: the instance that fires a moment later
    finds it free (C04)."""

    def take(self) -> bool:
        got = super().take()
        if got:
            self.give_back()
        return got


class NoRecheck(RedisJobGuard):
    """Right for exercise 15; never checks its lock again before a write (C35)."""

    def ensure_held(self, db) -> None:
        pass
