"""Leader election on ZooKeeper: the fair lock, held for as long as the session lives.

Curator's ``LeaderLatch`` in a few lines. Every candidate queues for one fair
lock (``locks.zk_fair``: ephemeral sequential nodes, each watching its
predecessor). The head of the queue is the leader, and stays leader until its
session ends: then its node vanishes, and the next candidate, which was
watching it, becomes leader. No polling, no herd: one candidate wakes.

A leader must check that it still leads before it acts (``ensure_leader``,
a round trip to the server): a leader that was paused past its session
timeout has been replaced, and must not do the leader's work.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod

from .errors import LockError, LockLost
from .zk_fair import ZkFairFactory, ZkFairLock
from .zk_session import ZooKeeperFactory

log = logging.getLogger("locks.zookeeper")

#: How long one wait for leadership lasts before the candidate looks again.
WAIT_S = 1.0


class Candidate(ABC):
    """This process as a candidate in the election called ``group``: what the shop's
    ``LeaderGuard`` asks of an election. ``_campaign`` runs in a thread of its own from
    ``start()`` until ``stop()``; a student's election (exercise 14) extends this class
    too, and the shop runs it in place of ``LeaderElection`` (``Config.election``)."""

    def __init__(self, factory: ZooKeeperFactory, group: str) -> None:
        self.factory = factory
        self.name = f"election:{group}"
        #: What stopped the campaign, if it died of an error (it no longer stands).
        self.failed: Exception | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._stand_until_stopped,
                                        name=f"candidate-{group}", daemon=True)

    def start(self) -> Candidate:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Step down (the next candidate takes over at once) and stop campaigning."""
        self._stop.set()
        self._thread.join(5)

    def _stand_until_stopped(self) -> None:
        try:
            self._campaign()
        except Exception as error:  # kept for whoever asks (a grader), and logged
            self.failed = error
            log.error("election %s: the campaign stopped: %r", self.name, error)

    @abstractmethod
    def is_leader(self) -> bool:
        """Whether we lead, as far as we know without asking the server (cheap: the
        scheduler asks at every fire time)."""

    @abstractmethod
    def ensure_leader(self) -> None:
        """Raise ``LockLost`` unless the server says we still lead (a round trip, just
        before the leader's work is written)."""

    @abstractmethod
    def _campaign(self) -> None:
        """Stand, lead while elected, stand again; until ``self._stop`` is set."""


class LeaderElection(Candidate):
    """The project's election: the fair lock, held for as long as the session lives."""

    def __init__(self, factory: ZkFairFactory, group: str) -> None:
        super().__init__(factory, group)
        self._lock: ZkFairLock | None = None

    def is_leader(self) -> bool:
        """Whether we lead, as far as we know without asking the server."""
        lock = self._lock
        return (lock is not None and lock.held and self.factory.available()
                and self.factory.session_id() == lock.session_id)

    def ensure_leader(self) -> None:
        """Raise ``LockLost`` unless the server says we still lead."""
        lock = self._lock
        if lock is None:
            raise LockLost(self.name, "not the leader")
        lock.ensure_held()

    def _campaign(self) -> None:
        while not self._stop.is_set():
            lock = self.factory.lock(self.name, timeout=WAIT_S)
            try:
                if not lock.acquire():
                    continue
            except LockError as error:  # ZooKeeper unreachable: try again shortly
                log.debug("election %s: %s", self.name, error)
                self._stop.wait(WAIT_S)
                continue
            log.info("elected: %s", self.name)
            self._lock = lock
            # Lead until our session ends (a dropped connection only pauses us:
            # is_leader() says no while it is down) or we are stopped.
            while (self.factory.session_id() == lock.session_id
                   and not self._stop.wait(0.1)):
                pass
            self._lock = None
            log.info("no longer leading: %s", self.name)
            try:
                lock.release()  # step down; after a lost session, only forget the hold
            except LockError:
                pass
