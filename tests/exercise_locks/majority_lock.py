"""Exercise 11 as a student solves it: the skeleton with its TODOs filled in."""

from locks import LockLost
from locks.redis_lock import RedisLock
from locks.redlock import RedlockBase, fan_out

COMPARE_AND_DELETE = RedisLock.COMPARE_AND_DELETE
CLOCK_DRIFT_FACTOR = 0.01
CLOCK_DRIFT_MS = 2


class MajorityLock(RedlockBase):

    server_timeout = 0.1

    def _try_acquire(self) -> bool:
        started = self._clock()
        answers = fan_out(self.clients, "SET", self.key, self.token, "NX", "PX",
                          self.lease_ms)
        elapsed_ms = (self._clock() - started) * 1000
        drift_ms = self.lease_ms * CLOCK_DRIFT_FACTOR + CLOCK_DRIFT_MS
        validity_ms = self.lease_ms - elapsed_ms - drift_ms
        yes = sum(answer in (b"OK", True, "OK") for answer in answers)
        if yes >= self.quorum and validity_ms > 0:
            self._valid_until = self._clock() + validity_ms / 1000
            return True
        fan_out(self.clients, "EVAL", COMPARE_AND_DELETE, 1, self.key, self.token)
        return False

    def _release(self) -> None:
        answers = fan_out(self.clients, "EVAL", COMPARE_AND_DELETE, 1, self.key, self.token)
        if sum(answer == 1 for answer in answers) < self.quorum:
            raise LockLost(self.name, "the lease expired")

    def _still_held(self) -> bool:
        return self._clock() < self._valid_until
