"""What a queue lock (``zk_fair``, ``zk_rw``) does besides its recipe: re-entry, and
leaving the queue.

Paths, readable in ``zkCli.sh``:

* ``/lockshop/fair/<name>/lock-<guid>-0000000007``  the fair lock's queue;
* ``/lockshop/rw/<name>/read-<guid>-0000000008``    the read/write lock's queue
  (``write-…`` for writers).

What this module guarantees:

* **re-entry by owner**: an owner (``locks.owner.current_owner()``, the
  thread or asyncio task that acquires) that holds a lock may acquire it
  again, with the same lock object or another one from the same factory,
  without queueing; its node is deleted at the release that balances its
  first acquire. Another owner (another thread of this process too) queues.
  A hold of a session that has ended is not re-entered: its node is gone;
* **a waiter that leaves deletes its node**, wherever it is in the queue,
  found by the lock object's guid (left behind, it would block everyone
  queued after it); if ZooKeeper cannot be reached, it is deleted once we
  are back (``zk_orphans``);
* ``look(name)``: the queue as ZooKeeper shows it, holders first.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kazoo.exceptions import NoNodeError

from .owner import current_owner
from .registry import LockView
from .support.zk_client import UNREACHABLE
from .zk_session import ROOT, ZooKeeperFactory, ZooKeeperLockBase


def sequence(child: str) -> int:
    """ZooKeeper's sequence suffix: always the last ten digits of the name."""
    return int(child[-10:])


@dataclass
class Hold:
    """One owner's hold on one lock: its node, and how many acquires it has not released."""

    node: str
    session_id: int
    fencing_token: int
    count: int = 1


class QueueLockBase(ZooKeeperLockBase):
    """A lock whose waiters queue as sequential nodes under ``<root>/<name>``."""

    root = ROOT
    #: The first part of our node's name ("lock", "read", "write").
    kind = "lock"

    def __init__(self, name: str, **options) -> None:
        if "/" in name:
            raise ValueError(f"a ZooKeeper lock name cannot contain '/': {name!r}")
        super().__init__(name, **options)
        self.parent = f"{self.root}/{name}"
        #: Ours alone: finds our node again when the answer to its create was lost.
        self.guid = uuid.uuid4().hex
        self._hold: Hold | None = None
        #: (parent, kind, owner) of our hold; the owner is the *acquiring* thread or task.
        self._hold_key: tuple[str, str, str] | None = None

    def _reenter(self) -> bool:
        """Count one more acquire if this owner already holds the lock (with this lock
        object, or another one from the same factory)."""
        if self.held:
            self._hold.count += 1
            return True
        self._hold_key = (self.parent, self.kind, current_owner())
        hold = self.factory.held_by_owner.get(self._hold_key)
        if hold is None or hold.session_id != self.factory.session_id():
            return False
        hold.count += 1
        self._hold = hold
        self.node, self.session_id, self._fencing_token = (hold.node, hold.session_id,
                                                           hold.fencing_token)
        return True

    def _start_hold(self) -> None:
        self._hold = Hold(self.node, self.session_id, self._fencing_token)
        self.factory.held_by_owner[self._hold_key] = self._hold

    def _end_hold(self) -> Hold | None:
        """One release: the hold when it was the last one, None for an inner release."""
        hold = self._hold
        hold.count -= 1
        if hold.count > 0:
            return None
        self.factory.held_by_owner.pop(self._hold_key, None)
        self._hold = None
        self.node, self.session_id = hold.node, hold.session_id
        return hold

    def _leave_queue(self) -> None:
        """Delete our node, wherever it is in the queue, found by our guid."""
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
            self.factory.orphans.delete_later(self.parent, self.guid, session)


class QueueFactory(ZooKeeperFactory):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        #: (parent, kind, owner) -> Hold: who holds what, for re-entry.
        self.held_by_owner: dict[tuple[str, str, str], Hold] = {}

    def look(self, name: str) -> LockView:
        """The queue under the lock's parent, in sequence order: the head holds it (or
        every reader ahead of the first writer), the rest wait."""
        parent = f"{self.lock_class.root}/{name}"
        try:
            children = sorted(self.call(self.client.get_children_async, parent), key=sequence)
        except NoNodeError:
            children = []
        nodes = [n for n in (self.describe_node(f"{parent}/{c}") for c in children) if n]
        holding = 1
        if nodes and nodes[0]["node"].rsplit("/", 1)[1].startswith("read-"):
            holding = next((i for i, n in enumerate(nodes)
                            if not n["node"].rsplit("/", 1)[1].startswith("read-")), len(nodes))
        return LockView(f"znodes under {parent}", nodes[:holding], nodes[holding:])
