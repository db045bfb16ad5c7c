"""What every ZooKeeper lock needs and its recipe does not: a student may skip this file.

One session per factory and its states, requests that give up in time, nodes
left behind by a lost answer, the errors, and two speed-ups of the hand-off
(``_delete_own_node``). The recipes themselves are in ``zk_simple``,
``zk_fair`` and ``zk_rw``.

A ZooKeeper lock is held by a *session*, not by a process: the lock is an
ephemeral node, which the server deletes when the session that created it
ends. The session timeout plays the part of a Redis lock's lease (here it is
``Backends.lease_ms``): a holder that crashes or is cut off loses its nodes
that long after its last heartbeat, and the next waiter proceeds.

Paths, readable in ``zkCli.sh``:

* ``/lockshop/simple/<name>``                      the simple lock's one node;
* ``/lockshop/fair/<name>/lock-<guid>-0000000007``  the fair lock's queue;
* ``/lockshop/rw/<name>/read-<guid>-0000000008``    the read/write lock's queue
  (``write-…`` for writers).

The session's states, as kazoo reports them:

CONNECTED
    all is well.
SUSPENDED
    the connection dropped. The session may still live on the server, or
    may have expired already: we cannot know, so a holder must not commit.
LOST
    the session expired: our ephemeral nodes are gone and someone else may
    hold the lock. kazoo then opens a new session, which holds nothing.

``ensure_held()`` (the shop calls it just before committing) asks the server
whether our node is still there and still owned by our session: that round
trip is what catches a session the server expired while we were paused.

Fencing tokens are the creation zxid of our node (``czxid``): every write to
a ZooKeeper ensemble gets a zxid, and zxids only grow, so the next holder's
node always has a larger one.

Every request that changes something is sent only while CONNECTED, and waits
at most ``operation_timeout`` for its answer. When ZooKeeper cannot be reached
every step raises ``BackendUnavailable`` (the shop answers 503); kazoo keeps
reconnecting in the background, so the shop recovers on its own.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kazoo.client import KazooState
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, ZnodeStat

from .base import DistributedLock, default_owner
from .registry import Backends, LockFactory, LockView, Strategy
from .zk_client import new_client

log = logging.getLogger("locks.zookeeper")

ROOT = "/lockshop"
#: How long one request may take before the lock step gives up with a 503.
OPERATION_TIMEOUT = 2.0
#: How long a request waits for a dropped connection to come back before giving up:
#: long enough for kazoo to move to another server of the ensemble.
RECONNECT_GRACE = 1.0
#: A waiter re-checks at least this often, even if no watch fires.
FALLBACK_WAIT = 1.0
#: The data a holder leaves on its node as it hands the lock over (``_delete_own_node``).
RELEASED = b"released"
#: The errors that mean "ZooKeeper cannot be reached (now)".
UNREACHABLE = (ConnectionLoss, SessionExpiredError, ConnectionClosedError,
               OperationTimeoutError, KazooTimeoutError)


class ZooKeeperLockBase(DistributedLock):
    """A lock whose state is ephemeral nodes of the factory's session."""

    backend = "zookeeper"
    backend_errors = UNREACHABLE

    def __init__(self, name: str, *, factory: ZooKeeperFactory, **options) -> None:
        super().__init__(name, **options)
        self.factory = factory
        self.client = factory.client
        #: Our node, while we are queued or hold the lock.
        self.node: str | None = None
        #: The session our node belongs to.
        self.session_id: int | None = None

    def _undo_failed_acquire(self) -> None:
        self._gave_up()  # do not leave a queued node behind

    def _still_held(self) -> bool:
        if self.client.state != KazooState.CONNECTED:
            return False  # SUSPENDED: maybe ours, maybe not; LOST: not ours
        if self.factory.session_id() != self.session_id:
            return False  # a new session: the old one's nodes are gone
        stat = self.factory.call(self.client.exists_async, self.node)
        return stat is not None and stat.ephemeralOwner == self.session_id

    # Helpers for the backends.

    def _created(self, path: str, stat: ZnodeStat) -> None:
        """Our node exists now: remember it, its session, and its fencing token."""
        self.node = path
        self.session_id = stat.ephemeralOwner
        self._fencing_token = stat.czxid

    def _watch(self, path: str, seconds: float) -> EventType | None:
        """Sleep until a watch on ``path`` fires, at most ``seconds``.

        ``DELETED`` when it was deleted (or was gone before we could watch
        it), ``CHANGED`` when its data changed (a holder handing the lock
        over, see ``_delete_own_node``), None after a timeout or any other
        event (kazoo fires every watch with ``NONE`` when the session goes).
        """
        fired = threading.Event()
        events = []

        def on_change(event) -> None:
            events.append(event)
            fired.set()
        # Two steps, no I/O: kazoo's connection thread may run it as it reads
        # the event, a thread hop sooner than its callback thread would.
        on_change.run_inline = True

        if self.factory.call(self.client.exists_async, path, watch=on_change) is None:
            return EventType.DELETED  # it went before we could watch it
        if not fired.wait(min(seconds, FALLBACK_WAIT)):
            return None
        self._metrics.record(self.strategy, "wakeup")
        return events[0].type if events[0].type in (EventType.DELETED, EventType.CHANGED) else None

    def _delete_own_node(self, *, hand_over: bool = False, wait: bool = False) -> None:
        """Send the delete of our node; raise ``NoNodeError`` if it went with our session.

        With ``hand_over``, our node's data is first set to ``released`` in
        the same transaction (still one write, one fsync). The waiter
        watching our node then gets ``CHANGED`` instead of ``DELETED``, and
        that tells it what a deletion cannot: we went as the lock's
        *exclusive holder*, not as a waiter giving up or a session ending.
        Everything ahead of us had gone before we held, so the lock is now
        the watcher's, without listing the queue again.

        Uncontended, we do not wait for the answer: ZooKeeper applies one
        session's requests in order, so anything we send next sees the node
        gone, and other clients see it as soon as the server has applied it,
        whether or not we have heard back. The answer is checked in the
        background: if it is lost with the connection, the node is deleted on
        reconnection.

        With ``wait`` (the hold was contended: someone is likely waiting for
        this very delete), we wait for the answer. Our waiting is not what
        the next holder waits for, but it lets kazoo's connection thread send
        the delete *now*: otherwise it goes out only once this thread stops
        for something else, after whatever the caller does next (in the
        benchmark, a tenth to a fifth of a millisecond on every hand-off).
        The caller is going to the back of the queue anyway.
        """
        node, self.node = self.node, None
        session = self.session_id
        if self.factory.session_id() != session:
            raise NoNodeError(node)  # it went with the session that made it
        try:
            sent = self.factory.send(self._hand_over if hand_over else self.client.delete_async,
                                     node, session=session)
        except SessionExpiredError:
            raise NoNodeError(node) from None  # it ended while we waited to send
        except UNREACHABLE:
            parent, _, child = node.rpartition("/")
            self.factory.forget_later(parent, child, session)  # still ours, still there
            raise
        if wait:
            sent.wait(OPERATION_TIMEOUT)
            self.factory.check_delete(sent, node, session)
        else:
            sent.rawlink(lambda result: self.factory.check_delete(result, node, session))

    def _hand_over(self, node: str):
        transaction = self.client.transaction()
        transaction.set_data(node, RELEASED)
        transaction.delete(node)
        return transaction.commit_async()


class ZooKeeperFactory(LockFactory):
    """One kazoo client, hence one session, shared by every lock of the strategy."""

    def __init__(self, strategy: Strategy, backends: Backends) -> None:
        if not backends.zk_hosts:
            raise ValueError("ZooKeeper locks need ZooKeeper hosts (host:port,...)")
        super().__init__(strategy, backends)
        self.client = new_client(
            backends.zk_hosts, timeout=backends.lease_ms / 1000,
            # Reconnect quickly and forever: a shop must recover without a restart.
            connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0})
        self._orphans: set[tuple[str, str, int]] = set()  # (parent, match, session)
        self._orphans_guard = threading.Lock()
        self._ensured: set[str] = set()
        self._connected = threading.Event()
        self._session: int | None = None
        self._ever_connected = False
        self.client.add_listener(self._on_state_change)
        # Not waiting here: a ZooKeeper that is down must not stop the shop from
        # starting. Until the session is up every lock step answers "unavailable".
        self.client.start_async()

    def lock_arguments(self) -> dict:
        return {"factory": self}

    def available(self) -> bool:
        # A factory that was just opened gets its moment to connect first.
        waited = self._connected.wait(0 if self._ever_connected else RECONNECT_GRACE)
        return waited and self.client.state == KazooState.CONNECTED

    def close(self) -> None:
        self.client.stop()
        self.client.close()

    def describe_node(self, path: str) -> dict | None:
        """A lock node as a holder or waiter: its owner (the node's data), when it was
        created, and the session that owns it; None when it is gone."""
        try:
            data, stat = self.call(self.client.get_async, path)
        except NoNodeError:
            return None
        return {"node": path, "owner": data.decode(errors="replace"), "since": stat.ctime / 1000,
                "session": f"{stat.ephemeralOwner:#x}"}

    # --- requests ----------------------------------------------------------------

    def session_id(self) -> int | None:
        """Our session, while it lives, even while the connection is down (SUSPENDED);
        kazoo's own ``client_id`` says None then, as if the session had ended."""
        return self._session

    def call(self, request: Callable, *args, session: int | None = None, **kwargs):
        """Send one request while CONNECTED; its answer within ``OPERATION_TIMEOUT``.

        With ``session``, only while that session lives: a delete meant for a
        node of an expired session must not be sent on its successor, where
        the same path may now be someone else's node.
        """
        return self.send(request, *args, session=session, **kwargs).get(timeout=OPERATION_TIMEOUT)

    def send(self, request: Callable, *args, session: int | None = None, **kwargs):
        """``call`` without waiting: the request's kazoo ``IAsyncResult``."""
        self.check_connected()
        if session is not None and session != self._session:
            raise SessionExpiredError(f"session {session:#x} ended")
        return request(*args, **kwargs)

    def check_delete(self, result, node: str, session: int) -> None:
        """The answer to a delete: one we did not wait for (on kazoo's callback
        thread), or one we waited for at most ``OPERATION_TIMEOUT``."""
        try:
            outcome = result.get(timeout=0)
            # A transaction answers with a list, holding the error of an operation that failed.
            if isinstance(outcome, list) and any(isinstance(o, NoNodeError) for o in outcome):
                raise NoNodeError(node)
        except NoNodeError:
            log.warning("%s was already gone at release: its session ended", node)
        except UNREACHABLE:
            parent, _, child = node.rpartition("/")
            self.forget_later(parent, child, session)

    def check_connected(self) -> None:
        if not self._connected.wait(RECONNECT_GRACE) or self.client.state != KazooState.CONNECTED:
            # A request sent now would wait in kazoo's queue and run whenever the
            # connection comes back, long after we gave up on it.
            raise ConnectionLoss(f"not connected to ZooKeeper ({self.client.state})")

    def ensure_path(self, path: str) -> None:
        """Create ``path`` and its parents once per factory (they are never deleted)."""
        if path not in self._ensured:
            self.call(self.client.ensure_path_async, path)
            self._ensured.add(path)

    # --- nodes left behind by a connection that dropped -------------------------

    def forget_later(self, parent: str, match: str, session_id: int | None) -> None:
        """Delete our node under ``parent`` named ``match`` (or holding ``-<match>-``)
        once we are connected again, if our session still owns it.

        A create or a delete whose answer was lost may or may not have
        happened. If the node is there, it stays for as long as our session
        lives, and holds or blocks the lock for everyone.
        """
        if session_id is None:
            return  # never had a session: nothing can have been created
        log.warning("%s/%s may be left behind by a lost answer; deleting it once "
                    "reconnected", parent, match)
        with self._orphans_guard:
            self._orphans.add((parent, match, session_id))
        if self.available():
            self.client.handler.spawn(self.delete_orphans)

    def delete_orphans(self) -> None:
        with self._orphans_guard:
            orphans, self._orphans = self._orphans, set()
        for parent, match, session_id in orphans:
            if self.session_id() != session_id:
                continue  # that session ended, and its ephemeral nodes with it
            try:
                for child in self.call(self.client.get_children_async, parent):
                    if child == match or f"-{match}-" in child:
                        self._delete_if_owned(f"{parent}/{child}", session_id)
            except NoNodeError:
                pass
            except UNREACHABLE:
                with self._orphans_guard:
                    self._orphans.add((parent, match, session_id))  # next time

    def _delete_if_owned(self, node: str, session_id: int) -> None:
        stat = self.call(self.client.exists_async, node)
        if stat is not None and stat.ephemeralOwner == session_id:
            self.call(self.client.delete_async, node, session=session_id)
            log.info("deleted %s, left behind by a lost answer", node)

    def _on_state_change(self, state: str) -> None:
        # Runs on kazoo's own thread: log, and hand any work to another thread.
        log.info("zookeeper session %s for %s", state, self.strategy.name)
        if state != KazooState.CONNECTED:
            self._connected.clear()
            if state == KazooState.LOST:
                self._session = None  # expired: its nodes are gone
            return
        self._session = self.client.client_id[0]
        self._ever_connected = True
        self._connected.set()
        if self._orphans:
            self.client.handler.spawn(self.delete_orphans)


# --- the queue locks' plumbing (zk_fair, zk_rw) ----------------------------------------

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


class QueueLockBase(ZooKeeperLockBase):
    """Re-entry, joining the queue in one round trip, and leaving it: what a queue
    lock does besides its recipe."""

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
        self._hold_key = (self.parent, self.kind, default_owner())
        hold = self.factory.holds.get(self._hold_key)
        if hold is None or hold.session_id != self.factory.session_id():
            return False
        hold.count += 1
        self._hold = hold
        self.node, self.session_id, self._fencing_token = (hold.node, hold.session_id,
                                                           hold.fencing_token)
        return True

    def _start_hold(self, contended: bool) -> None:
        self._hold = Hold(self.node, self.session_id, self._fencing_token, contended)
        self.factory.holds[self._hold_key] = self._hold

    def _end_hold(self) -> Hold | None:
        """One release: the hold when it was the last one, None for an inner release."""
        hold = self._hold
        hold.count -= 1
        if hold.count > 0:
            return None
        self.factory.holds.pop(self._hold_key, None)
        self._hold = None
        self.node, self.session_id = hold.node, hold.session_id
        return hold

    def _join_queue(self) -> list[str]:
        """Create our sequential node and list the queue: one round trip for both,
        since ZooKeeper applies one session's requests in order."""
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

    def _list_queue(self) -> list[str]:
        return self.factory.call(self.client.get_children_async, self.parent)

    def _leave_queue(self) -> None:
        """Delete our node, wherever it is in the queue, found by our guid."""
        session = self.session_id or self.factory.session_id()
        self.node = None
        try:
            self.factory.check_connected()
            for child in self._list_queue():
                if f"-{self.guid}-" in child:
                    self.factory.call(self.client.delete_async, f"{self.parent}/{child}")
        except NoNodeError:
            pass
        except UNREACHABLE:
            self.factory.forget_later(self.parent, self.guid, session)


class QueueFactory(ZooKeeperFactory):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        #: (parent, kind, owner) -> Hold: who holds what, for re-entry.
        self.holds: dict[tuple[str, str, str], Hold] = {}

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
