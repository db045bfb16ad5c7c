"""Exercise 12 as students get it wrong: each lock is the solved skeleton
(reentrant_queue_lock.py) but for one thing, and the grader must name that thing's
lesson. Name the class: reentry_mistakes.py:SessionIsOwner."""

import threading
from pathlib import Path

from kazoo.exceptions import NoNodeError

from locks.custom import load_lock_class

Solved = load_lock_class(str(Path(__file__).with_name("reentrant_queue_lock.py")))


class SessionIsOwner(Solved):
    """Re-enters when the lowest node is its *session's*: every thread of the process
    shares the session, so any of them walks in beside the holder (C29)."""

    def _owner_of(self, path: str) -> str | None:
        try:
            stat = self.client.exists(path)
        except NoNodeError:
            return None
        return self.owner if stat and stat.ephemeralOwner == self.client.client_id[0] \
            else None


class InnerReleaseDeletes(Solved):
    """Counts entries up but deletes the node at every release: the inner call's release
    frees the lock under the outer call (C27)."""

    def _release(self) -> None:
        self.entries[self.node] = 1
        super()._release()


class RemembersInMemory(Solved):
    """Re-enters because its own memory says "this owner holds that lock", without asking
    ZooKeeper whose the lowest node is: after its session expired it walks in beside the
    new holder (C29)."""

    held_here: dict[tuple[str, str], str] = {}

    def _try_acquire(self) -> bool:
        if not self.held and self.node is None:
            node = self.held_here.get((self.parent, self.owner))
            if node is not None:
                self.node = node
                self.entries[node] = self.entries.get(node, 0) + 1
                return True
        taken = super()._try_acquire()
        if taken:
            self.held_here[(self.parent, self.owner)] = self.node
        return taken

    def _release(self) -> None:
        node = self.node
        try:
            super()._release()
        finally:
            if node not in self.entries:
                self.held_here.pop((self.parent, self.owner), None)


class GetIdentOwner(Solved):
    """Writes threading.get_ident() into its node as the owner: Python gives a dead
    thread's id to the next thread, which then enters a lock the dead one holds (C49)."""

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.owner = str(threading.get_ident())
