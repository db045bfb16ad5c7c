"""Exercise 11: Redlock, one lock over five independent Redis servers.

Articles A1 and A4: one Redis server is a single point of failure. Redlock asks
five independent servers for SET key token NX PX lease; the lock is yours if a
majority (3 of 5) said yes, so it survives two servers down and refuses with
three (lesson C16). Asking takes time, and a server that does not answer must
cost a short timeout, not the lease: the lock is valid only for the lease less
the time spent asking, less an allowance for the servers' clocks drifting
(1% of the lease + 2 ms); an attempt that fails must unlock every server, since
some may have said yes (C33). A server that restarts without persistence
forgets the key, and a second client can then get a majority while the first
holds (C17): the Redlock write-up asks that a crashed server stay out for one
lease before it comes back, and the holder must not trust its lock past its
validity.

Check it:   ./run exercise check 11 majority_lock.py

What you may use (the base class, RedlockBase, sets them up):
    self.clients    one redis-py client per server (made with server_timeout below)
    self.quorum     how many must say yes: len(self.clients) // 2 + 1
    self.key        this lock's key, "lockshop:lock:<name>", the same on every server
    self.token      a value no other acquisition uses (new for every lock object)
    self.lease_ms   how long a lease lasts, in milliseconds
    self._clock()   a monotonic clock, in seconds
    fan_out(self.clients, *command)   send a command to every server at once, then
                    read every answer: a list, one per server, UNREACHABLE for a server
                    that did not answer in time (SET NX answers b"OK" or None)
    COMPARE_AND_DELETE  the Lua script that deletes the key only if it holds the token:
                    fan_out(self.clients, "EVAL", COMPARE_AND_DELETE, 1, self.key, self.token)
                    answers 1 where it deleted
BackendUnavailable(self.name, "redis") says that too few servers answered at all.
"""

from locks import BackendUnavailable, LockLost  # noqa: F401 - for the TODOs
from locks.redis_lock import RedisLock
from locks.redlock import UNREACHABLE, RedlockBase, fan_out  # noqa: F401 - for the TODOs

COMPARE_AND_DELETE = RedisLock.COMPARE_AND_DELETE
CLOCK_DRIFT_FACTOR = 0.01
CLOCK_DRIFT_MS = 2


class MajorityLock(RedlockBase):

    # TODO 4: how long one server may take to answer before it counts as down, in
    # seconds. The default, 2 s, is the single Redis lock's: far too long next to a 2 s
    # lease. The factory makes self.clients with it.
    server_timeout = 2.0

    def _try_acquire(self) -> bool:
        """One attempt on every server: True if a majority said yes in time."""
        # TODO 1: note the clock; fan_out SET self.key self.token NX PX self.lease_ms;
        # elapsed = the time that took; validity = lease - elapsed - drift (drift:
        # CLOCK_DRIFT_FACTOR of the lease + CLOCK_DRIFT_MS). If at least self.quorum said
        # yes and the validity is above 0, keep when it ends (self._valid_until) and return
        # True. Otherwise delete your token on every server (COMPARE_AND_DELETE through
        # fan_out) and return False.
        raise NotImplementedError("TODO 1: ask every server, count the yeses, compute the "
                                  "validity; on failure unlock every server")

    def _release(self) -> None:
        """Give the lock back on every server; LockLost if fewer than a majority had it."""
        # TODO 2: COMPARE_AND_DELETE on every server; count the 1s; fewer than self.quorum:
        # raise LockLost(self.name, "the lease expired").
        raise NotImplementedError("TODO 2: compare-and-delete on every server")

    def _still_held(self) -> bool:
        """Whether the lock may still be trusted (the shop asks before it writes)."""
        # TODO 3: True only until the validity you computed has run out.
        raise NotImplementedError("TODO 3: held only within the validity")
