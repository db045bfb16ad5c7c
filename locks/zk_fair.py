"""The fair ZooKeeper lock: a queue of sequential nodes, each waiter watching one.

The recipe from the ZooKeeper documentation (and Curator's ``InterProcessMutex``):

acquire
    1. create ``/lockshop/fair/<name>/lock-<guid>-`` as an *ephemeral,
       sequential* node: ZooKeeper appends a number that grows with every
       node created under the parent, so the children form a queue;
    2. list the children: if ours has the lowest number, the lock is ours;
    3. otherwise watch only the node just before ours (our predecessor) and
       sleep until it is deleted, then go back to 2. If the predecessor
       vanished between 2 and 3 (it gave up, or released), the watch cannot be
       set: go back to 2 at once.
release
    delete our node: that wakes exactly one waiter, the one behind us.

Round trips saved, because ZooKeeper applies one session's requests in
order and sequence numbers only grow (nobody can queue ahead of us later):

* steps 1 and 2 are sent together: the list already holds our node;
* the holder *hands the lock over*: it sets its node's data to
  ``released`` and deletes the node in one transaction, so the waiter
  behind it is woken by "data changed", not "deleted". Only a holder does
  that, and a holder had nobody left ahead of it: the lock is the waiter's
  without step 2. A plain deletion may be a waiter giving up or a session
  ending, with others still ahead: then we list again;
* unless the predecessor we watched was the *only* node ahead of us: then
  its deletion, of whatever kind, means the lock is ours.

A release waits for its transaction's answer only when the hold was
contended, so that kazoo sends it at once; uncontended, it does not wait
(see ``ZooKeeperLockBase._delete_own_node``). A waiter's wake-up runs on
kazoo's connection thread, one thread hop sooner than a plain watch
(``locks.zk_client``).

No herd: each release wakes one waiter (the simple lock wakes them all), and
the queue is first come, first served, so no waiter starves.

The ``<guid>`` in the node's name is ours alone. If the answer to our create
is lost with the connection, the node may exist without our knowing its
sequence number; the guid lets us find it and delete it once we are back
(a node left behind would block the queue for as long as our session lives).
A waiter that gives up (timeout, error) deletes its node too.

Re-entrant: a thread (or asyncio task) that holds the lock may acquire it
again, with the same lock object or another one from the same factory; the
node is deleted only when every acquire has been released.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType

from .base import default_owner
from .errors import LockLost
from .zk_base import (OPERATION_TIMEOUT, ROOT, UNREACHABLE, ZooKeeperFactory,
                      ZooKeeperLockBase)

FAIR_ROOT = f"{ROOT}/fair"


def sequence(child: str) -> int:
    """ZooKeeper's sequence suffix: always the last ten digits of the name."""
    return int(child[-10:])


@dataclass
class Hold:
    """One owner's hold on one lock: its node, and how many acquires it has not released."""

    node: str
    session_id: int
    fencing_token: int
    #: Its acquire had to wait: the release waits for ZooKeeper's answer.
    contended: bool = False
    count: int = 1


class ZkQueueLock(ZooKeeperLockBase):
    """A lock whose waiters queue as sequential nodes under one parent."""

    root = FAIR_ROOT
    #: The first part of our node's name ("lock", "read", "write").
    kind = "lock"
    reentrant = True
    #: Our hold excludes everyone: the waiter behind us may take the lock from
    #: our hand-over without looking (a shared read hold must not hand over).
    hands_over = True

    def __init__(self, name: str, **options) -> None:
        if "/" in name:
            raise ValueError(f"a ZooKeeper lock name cannot contain '/': {name!r}")
        super().__init__(name, **options)
        self.parent = f"{self.root}/{name}"
        self.guid = uuid.uuid4().hex
        self._blocker: str | None = None  # the node we wait for
        self._blocker_is_the_last = False  # ... and it is the only one ahead of us
        self._ours_by_watch = False  # it went: the lock is ours without looking
        self._hold: Hold | None = None
        self._waited = False  # queued behind others for this hold: others likely queue behind us
        #: (parent, kind, owner) of our hold; the owner is the *acquiring* thread.
        self._hold_key: tuple[str, str, str] | None = None

    def blockers(self, queue: list[str], mine: str) -> list[str]:
        """The nodes that must go before we may hold the lock, in queue order.

        ``queue`` is every child, in sequence order. Exclusive: every node
        ahead of ours, whatever it is.
        """
        return queue[:queue.index(mine)]

    # --- the primitive steps ----------------------------------------------------

    def _try_acquire(self) -> bool:
        if self._reenter():
            return True
        if not self._ours_by_watch:
            children = self._join_queue() if self.node is None else self.factory.call(
                self.client.get_children_async, self.parent)
            mine = self.node.rpartition("/")[2]
            if mine not in children:
                # Our node went with our session (it expired while we waited):
                # join the queue again, at its end.
                self.node = None
                return False
            blockers = self.blockers(sorted(children, key=sequence), mine)
            if blockers:
                self._blocker, self._blocker_is_the_last = blockers[-1], len(blockers) == 1
                return False
        self._ours_by_watch = False
        self._hold = Hold(self.node, self.session_id, self._fencing_token, self._waited)
        self.factory.holds[self._hold_key] = self._hold
        return True

    def _wait_for_release(self, seconds: float) -> None:
        self._waited = True
        event = self._watch(f"{self.parent}/{self._blocker}", seconds)
        self._ours_by_watch = (event == EventType.CHANGED  # handed over by its holder
                               or (event == EventType.DELETED and self._blocker_is_the_last))

    def _release(self) -> None:
        hold = self._hold
        hold.count -= 1
        if hold.count > 0:
            return  # an inner release of a re-entered lock
        self.factory.holds.pop(self._hold_key, None)
        self._hold = None
        self.node, self.session_id = hold.node, hold.session_id
        try:
            self._delete_own_node(hand_over=self.hands_over, wait=hold.contended)
        except NoNodeError:
            raise LockLost(self.name, "our node is gone: the ZooKeeper session ended") from None

    def _gave_up(self) -> None:
        """Leave the queue: a node left behind would block everyone behind it."""
        session = self.session_id or self.factory.session_id()
        self.node = None
        try:
            self.factory.check_connected()
            for child in self.factory.call(self.client.get_children_async, self.parent):
                if f"-{self.guid}-" in child:
                    self.factory.call(self.client.delete_async, f"{self.parent}/{child}")
        except NoNodeError:
            pass
        except UNREACHABLE:
            self.factory.forget_later(self.parent, self.guid, session)

    # --- helpers --------------------------------------------------------------------

    def _reenter(self) -> bool:
        """Count one more acquire if this owner already holds the lock."""
        if self.held:  # again, with this same object
            self._hold.count += 1
            return True
        self._hold_key = (self.parent, self.kind, default_owner())
        hold = self.factory.holds.get(self._hold_key)  # again, with another object
        if hold is None or hold.session_id != self.factory.session_id():
            return False
        hold.count += 1
        self._hold = hold
        self.node, self.session_id, self._fencing_token = (hold.node, hold.session_id,
                                                           hold.fencing_token)
        return True

    def _join_queue(self) -> list[str]:
        """Create our sequential node and list the queue: one round trip for both."""
        self.factory.ensure_path(self.parent)
        self.factory.check_connected()
        session = self.factory.session_id()
        try:
            created = self.client.create_async(f"{self.parent}/{self.kind}-{self.guid}-",
                                               self.owner.encode(), ephemeral=True,
                                               sequence=True, include_data=True)
            listed = self.client.get_children_async(self.parent)
            path, stat = created.get(timeout=OPERATION_TIMEOUT)
            children = listed.get(timeout=OPERATION_TIMEOUT)
        except UNREACHABLE:
            self.factory.forget_later(self.parent, self.guid, session)
            raise
        self._created(path, stat)
        return children


class ZkFairLock(ZkQueueLock):
    """The exclusive lock: ``ZkQueueLock`` as it is."""


class ZkQueueFactory(ZooKeeperFactory):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        #: (parent, kind, owner) -> Hold: who holds what, for re-entry.
        self.holds: dict[tuple[str, str, str], Hold] = {}


class ZkFairFactory(ZkQueueFactory):
    lock_class = ZkFairLock
