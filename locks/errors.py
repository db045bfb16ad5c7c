"""The lock errors: one base class, one subclass per thing that can go wrong.

Each error carries what a caller needs to act on it (the lock's name, the
timeout, the owner) so that a log line or an HTTP answer can say more than
"lock error".
"""

from __future__ import annotations


class LockError(Exception):
    """Base of every error raised by the ``locks`` package."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{message} (lock {name!r})")
        self.name = name


class LockNotAcquired(LockError):
    """The lock could not be had within the timeout (or at once, when not blocking)."""

    def __init__(self, name: str, timeout: float) -> None:
        super().__init__(name, f"not acquired within {timeout:g}s")
        self.timeout = timeout


class LockNotOwned(LockError):
    """``release()`` was called by someone who does not hold the lock."""

    def __init__(self, name: str, owner: str | None = None) -> None:
        detail = f" by {owner}" if owner else ""
        super().__init__(name, f"released{detail}, who does not hold it")
        self.owner = owner


class LockLost(LockError):
    """The lock was held, and no longer is: its lease expired, its session ended.

    A holder that gets this must not write: someone else may hold the lock now.
    """

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(name, f"lost while held: {reason}")
        self.reason = reason


class BackendUnavailable(LockError):
    """The lock's backend (Redis, ZooKeeper, a database) cannot be reached.

    Nothing was locked; the caller must not go on as if it had the lock.
    """

    def __init__(self, name: str, backend: str, cause: BaseException | None = None) -> None:
        detail = f": {cause}" if cause else ""
        super().__init__(name, f"{backend} unavailable{detail}")
        self.backend = backend


class UnknownStrategy(LookupError):
    """No lock strategy is registered under this name."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown strategy {name!r}; known: {', '.join(known)}")
        self.name = name
        self.known = known
