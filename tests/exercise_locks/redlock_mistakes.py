"""Exercise 11's mistakes: Redlocks that are right but for one thing."""

from __future__ import annotations

from locks.redlock import UNREACHABLE, Redlock, fan_out


class SlowServers(Redlock):
    """A single Redis lock's 2 s timeout per server: two paused servers eat the lease (C33)."""

    server_timeout = 2.0


class TrustsForever(Redlock):
    """Never says lost: the shop writes long after the servers let the key go (C33, C17)."""

    def _still_held(self) -> bool:
        return True


class ValidFromTheEnd(Redlock):
    """Counts the whole lease from the moment its answers came in, forgetting the time
    spent asking: it trusts itself after the keys have expired (C33)."""

    def _try_acquire(self) -> bool:
        if not super()._try_acquire():
            return False
        self._valid_until = self._clock() + self.lease_ms / 1000
        return True


class LeavesItsYeses(Redlock):
    """A failed attempt returns without unlocking the servers that said yes (C33)."""

    def _try_acquire(self) -> bool:
        delete, self._delete_everywhere = self._delete_everywhere, lambda: 0
        try:
            return super()._try_acquire()
        finally:
            self._delete_everywhere = delete


class MajorityOfAnswers(Redlock):
    """Counts a majority of the servers that answered, not of all five: with three
    down, two yeses pass (C16)."""

    def _try_acquire(self) -> bool:
        answers = fan_out(self.clients, "SET", self.key, self.token, "NX", "PX", self.lease_ms)
        answered = [answer for answer in answers if answer is not UNREACHABLE]
        if sum(answer not in (None, False) for answer in answered) > len(answered) // 2:
            self._valid_until = self._clock() + self.lease_ms / 2000
            return True
        self._delete_everywhere()
        return False
