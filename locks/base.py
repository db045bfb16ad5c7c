"""The lock contract: one base class that owns everything backends share.

A backend implements two primitive steps:

* ``_try_acquire()``: one attempt, True if the lock is now ours; never blocks long.
* ``_release()``: give the lock back; raise ``LockNotOwned`` or ``LockLost``
  when the backend shows it was no longer ours.

and may override a few more:

* ``_wait_for_release(seconds)``: how a waiter passes the time before its next
  attempt. The default sleeps with exponential backoff and jitter; a backend
  that can be *told* when the lock frees (a condition, a pub/sub message, a
  ZooKeeper watch) overrides it and wakes up at once.
* ``_still_held()``: ask the backend whether the lock is still ours. The
  default trusts our own bookkeeping, which is right only for locks that
  cannot expire.
* ``_gave_up()``: a wait timed out (or the backend failed mid-wait): leave
  any queue the wait joined.

A backend names the errors that mean "it cannot be reached now" in
``backend_errors``; the base turns them into ``BackendUnavailable`` in every
public step, so no backend has to wrap ``acquire``/``release`` itself.

The base gives every lock the same public face: ``acquire(blocking, timeout)``
returning a bool, ``release()``, ``with``, ``held``, ``ensure_held()`` and
``fencing_token``, plus logging, metrics and a log of its holds (``locks.hold_log``).
A lock object belongs to one thread for one hold, as in redis-py: make a new one
per critical section.

The *owner* of a hold is the thread (or asyncio task) that asked for it, named
by ``locks.owner.current_owner()``: host, pid and thread for a person to read,
and a random part made when that thread first asked. It is not the thread id:
Python gives a dead thread's id to the next thread, and a reentrant lock keyed
on it would let that new thread into a lock the dead one still holds.
"""

from __future__ import annotations

import logging
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from types import TracebackType

from .errors import (
    BackendUnavailable,
    LockError,
    LockLost,
    LockNotAcquired,
    LockNotOwned,
)
from .hold_log import HoldLog
from .hold_log import hold_log as default_hold_log
from .metrics import MetricsRegistry
from .metrics import metrics as default_metrics
from .owner import current_owner

log = logging.getLogger("locks")

Clock = Callable[[], float]
Sleep = Callable[[float], None]


class DistributedLock(ABC):
    """A named mutual-exclusion lock whose backend is up to the subclass."""

    #: First pause between attempts when waiting by polling; doubles up to the max.
    poll_interval: float = 0.002
    max_poll_interval: float = 0.05
    #: A reentrant lock may be acquired again by its holder; each acquire needs a release.
    reentrant: bool = False
    #: What the backend is called in errors, and its exceptions that mean "cannot be
    #: reached now": every public step turns them into ``BackendUnavailable``.
    backend: str = "backend"
    backend_errors: tuple[type[BaseException], ...] = ()

    def __init__(
        self,
        name: str,
        *,
        strategy: str | None = None,
        timeout: float = 5.0,
        owner: str | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = time.sleep,
        metrics: MetricsRegistry = default_metrics,
        hold_log: HoldLog = default_hold_log,
    ) -> None:
        if not name:
            raise ValueError("a lock needs a name")
        if timeout < 0:
            raise ValueError(f"timeout must be >= 0, got {timeout}")
        self.name = name
        self.strategy = strategy or type(self).__name__
        self.default_timeout = timeout
        self.owner = owner or current_owner()
        self._clock = clock
        self._sleep = sleep
        self._metrics = metrics
        self._hold_log = hold_log
        self._hold_id: int | None = None
        self._acquired_at: float | None = None
        self._next_poll = self.poll_interval
        self._fencing_token: int | None = None
        self._depth = 0

    # --- the primitive steps a backend provides -------------------------

    @abstractmethod
    def _try_acquire(self) -> bool:
        """Make one attempt; True when the lock is now ours."""

    @abstractmethod
    def _release(self) -> None:
        """Give the lock back to the backend."""

    def _wait_for_release(self, seconds: float) -> None:
        """Pass at most ``seconds`` before the next attempt (default: poll with backoff)."""
        # Jitter keeps waiters that started together from retrying together.
        pause = min(seconds, self._next_poll * random.uniform(0.5, 1.5))
        self._next_poll = min(self._next_poll * 2, self.max_poll_interval)
        self._sleep(pause)

    def _still_held(self) -> bool:
        """Whether the backend still says the lock is ours."""
        return True

    def _gave_up(self) -> None:  # noqa: B027 - a hook: most backends have nothing to undo
        """Called when a wait times out: leave any queue the wait joined."""

    def _undo_failed_acquire(self) -> None:  # noqa: B027 - a hook, like _gave_up
        """Called when the backend failed during ``acquire``: undo what the attempt may
        have left there (a queued node). Most backends have nothing to undo."""

    # --- the public face --------------------------------------------------

    @property
    def held(self) -> bool:
        """Whether this object acquired the lock and has not released it."""
        return self._acquired_at is not None

    @property
    def fencing_token(self) -> int | None:
        """A number that grows with every acquisition, where the backend can give one."""
        return self._fencing_token

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lock; wait up to ``timeout`` seconds when blocking. True if taken."""
        try:
            return self._acquire(blocking, timeout)
        except self.backend_errors as error:
            self._undo_failed_acquire()
            raise BackendUnavailable(self.name, self.backend, error) from error

    def release(self) -> None:
        """Give the lock back; raise ``LockNotOwned`` if this object does not hold it."""
        try:
            self._release_hold()
        except self.backend_errors as error:
            raise BackendUnavailable(self.name, self.backend, error) from error

    def read(self) -> None:
        """Say that the holder has read what it will decide on: an audit can then tell
        two holders that acted on the same state from two whose writes the storage put
        in order (the later one read the earlier one's write)."""
        self._hold_log.read(self._hold_id)

    def wrote(self) -> None:
        """Say that the work done under this hold was written (committed): the hold log
        keeps it, so an audit can tell two holders that both wrote from a late one whose
        write fencing refused."""
        self._hold_log.wrote(self._hold_id)

    def ensure_held(self) -> None:
        """Raise ``LockLost`` unless the lock is still ours: call it just before writing."""
        try:
            self._ensure_held()
        except self.backend_errors as error:
            raise BackendUnavailable(self.name, self.backend, error) from error

    # --- what the public steps do, on top of the backend's primitives ----

    def _acquire(self, blocking: bool, timeout: float | None) -> bool:
        if self.held:
            if not self.reentrant:
                raise RuntimeError(f"lock {self.name!r} is already held by this object")
            # Re-entry: the backend counts it too (and the lease is renewed).
            if not self._try_acquire():
                raise LockLost(self.name, "re-entry refused: the lock is no longer ours")
            self._depth += 1
            return True
        timeout = self.default_timeout if timeout is None else timeout
        started = self._clock()
        deadline = started + (timeout if blocking else 0.0)
        self._next_poll = self.poll_interval
        while True:
            if self._try_acquire():
                self._acquired_at = self._clock()
                self._depth = 1
                waited = self._acquired_at - started
                self._metrics.record(self.strategy, "acquired", waited)
                self._hold_id = self._hold_log.opened(self.name, self.strategy, self.owner,
                                                      self._fencing_token)
                log.debug("acquired %s (%s) after %.4fs", self.name, self.strategy, waited)
                return True
            remaining = deadline - self._clock()
            if remaining <= 0:
                self._gave_up()
                self._metrics.record(self.strategy, "timeout", self._clock() - started)
                log.debug("gave up on %s (%s) after %.3fs", self.name, self.strategy, timeout)
                return False
            self._wait_for_release(remaining)

    def _release_hold(self) -> None:
        if self._acquired_at is None:
            raise LockNotOwned(self.name, self.owner)
        if self._depth > 1:  # an inner release of a reentrant lock
            self._release()
            self._depth -= 1
            return
        releasing_at = time.time()  # the hold log's real-time clock, not self._clock
        held_for = self._clock() - self._acquired_at
        self._acquired_at = None
        self._depth = 0
        ended = "release failed"  # unless the backend answers, below
        try:
            self._release()
            ended = "released"
        except LockLost:
            ended = "lost"
            self._metrics.record(self.strategy, "lost")
            raise
        finally:
            self._hold_log.closed(self._hold_id, ended, at=releasing_at)
        self._metrics.record(self.strategy, "released", held_for)
        log.debug("released %s (%s) after %.4fs", self.name, self.strategy, held_for)

    def _ensure_held(self) -> None:
        if self._acquired_at is None:
            raise LockLost(self.name, "not acquired, or already released")
        if not self._still_held():
            self._metrics.record(self.strategy, "lost")
            raise LockLost(self.name, "the backend no longer shows this owner")

    def __enter__(self) -> DistributedLock:
        if not self.acquire():
            raise LockNotAcquired(self.name, self.default_timeout)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.release()
            return
        # The body already failed: release what we can, but let its error win.
        try:
            self.release()
        except LockError as release_error:
            log.warning("releasing %s after an error failed too: %s", self.name, release_error)

    def __repr__(self) -> str:
        state = "held" if self.held else "free"
        return f"<{type(self).__name__} {self.name!r} {self.strategy} {state}>"
