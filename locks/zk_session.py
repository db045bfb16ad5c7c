"""The ZooKeeper session every lock of a strategy shares, and the requests sent on it.

A ZooKeeper lock is held by a *session*, not by a process: the lock is an
ephemeral node, which the server deletes when the session that created it
ends. The session timeout plays the part of a Redis lock's lease (here it is
``Backends.lease_ms``): a holder that crashes or is cut off loses its nodes
that long after its last heartbeat, and the next waiter proceeds. The
recipes themselves are in ``zk_simple``, ``zk_fair`` and ``zk_rw``.

The session's states, as kazoo reports them:

CONNECTED
    all is well.
SUSPENDED
    the connection dropped. The session may still live on the server, or
    may have expired already: we cannot know, so a holder must not commit.
LOST
    the session expired: our ephemeral nodes are gone and someone else may
    hold the lock. kazoo then opens a new session, which holds nothing.

What this module guarantees:

* every request that changes something is sent only while CONNECTED, and
  waits at most ``OPERATION_TIMEOUT`` for its answer; when ZooKeeper cannot
  be reached every lock step raises ``BackendUnavailable`` (the shop
  answers 503), and kazoo keeps reconnecting in the background, so the
  shop recovers on its own;
* a waiter rides out a dropped connection or an ended session, as kazoo's
  recipe does: its reads are sent again once kazoo has reconnected
  (``read``), and on a new session, where its node is gone, it queues
  again; it raises only when ZooKeeper stays out of reach;
* a request meant for one session's node is never sent on its successor,
  where the same path may now be someone else's node;
* ``ensure_held()`` (the shop calls it just before committing) asks the
  server whether our node is still there and still owned by our session:
  that round trip is what catches a session the server expired while we
  were paused. An answer we cannot have (the connection went first) is
  a lost lock, as a dropped connection is before we ask;
* a lock's fencing token is the creation zxid of its node (``czxid``):
  every write to a ZooKeeper ensemble gets a zxid, and zxids only grow, so
  the next holder's node always has a larger one;
* a node a lost answer may have left behind is deleted once we are back
  (``zk_orphans``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kazoo.client import KazooState
from kazoo.exceptions import ConnectionLoss, NoNodeError, SessionExpiredError
from kazoo.protocol.states import ZnodeStat

from .base import DistributedLock
from .registry import Backends, LockFactory, Strategy
from .support.zk_client import UNREACHABLE, new_client, run_inline
from .zk_orphans import Orphans

log = logging.getLogger("locks.zookeeper")

ROOT = "/lockshop"
#: How long one request may take before the lock step gives up with a 503.
OPERATION_TIMEOUT = 2.0
#: How long a request waits for a dropped connection to come back before giving up:
#: long enough for kazoo to move to another server of the ensemble.
RECONNECT_GRACE = 1.0


class ZooKeeperLockBase(DistributedLock):
    """A lock whose state is ephemeral nodes of the factory's session."""

    backend = "zookeeper"
    backend_errors = UNREACHABLE
    #: Longest sleep without a watch firing: a waiter looks again at least this often.
    fallback_poll = 1.0

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
        try:
            stat = self.factory.call(self.client.exists_async, self.node)
        except (ConnectionLoss, SessionExpiredError):
            # The connection went while we asked (the server ends an expired session's
            # connection, and it may close before we hear of the expiry): as SUSPENDED
            # above, we cannot know, so the lock is not ours to write under.
            return False
        return stat is not None and stat.ephemeralOwner == self.session_id

    # Helpers for the recipes.

    def _created(self, path: str, stat: ZnodeStat) -> None:
        """Our node exists now: remember it, its session, and its fencing token."""
        self.node = path
        self.session_id = stat.ephemeralOwner
        self._fencing_token = stat.czxid

    def _delete_own_node(self, request: Callable | None = None) -> None:
        """Send the delete of our node; raise ``NoNodeError`` if it went with our session.

        ``request(node)`` sends it (default: a plain delete) and answers
        kazoo's ``IAsyncResult``: of a delete, or of a transaction that
        deletes (``zk_fair``'s hand-over).

        We do not wait for the answer: ZooKeeper applies one session's
        requests in order, so anything we send next sees the node gone, and
        other clients see it as soon as the server has applied it, whether or
        not we have heard back. The request leaves at once, from this thread
        (``support.zk_client``). The answer is checked as it is read, on kazoo's
        connection thread: if it is lost with the connection, the node is
        deleted on reconnection.
        """
        node, self.node = self.node, None
        session = self.session_id
        if self.factory.session_id() != session:
            raise NoNodeError(node)  # it went with the session that made it
        try:
            sent = self.factory.send(request or self.client.delete_async, node, session=session)
        except SessionExpiredError:
            raise NoNodeError(node) from None  # it ended while we waited to send
        except UNREACHABLE:
            parent, _, child = node.rpartition("/")
            self.factory.orphans.delete_later(parent, child, session)  # still ours, still there
            raise
        sent.rawlink(run_inline(lambda result: self.factory.check_delete(result, node, session)))


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
        self.orphans = Orphans(self)
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

    def read(self, request: Callable, *args, **kwargs):
        """``call`` for a read a waiter sends (``getChildren``, ``exists``): when the
        connection drops or the session ends before it is answered, it is sent again
        once we are connected, as kazoo's recipe retries its reads. It raises only when
        ZooKeeper cannot be reached: not connected again within ``RECONNECT_GRACE``.
        On a new session the answer shows our node gone, and the waiter queues again."""
        while True:
            try:
                return self.call(request, *args, **kwargs)
            except (ConnectionLoss, SessionExpiredError):
                self.check_connected()

    def send(self, request: Callable, *args, session: int | None = None, **kwargs):
        """``call`` without waiting: the request's kazoo ``IAsyncResult``."""
        self.check_connected()
        if session is not None and session != self._session:
            raise SessionExpiredError(f"session {session:#x} ended")
        return request(*args, **kwargs)

    def check_delete(self, result, node: str, session: int) -> None:
        """The answer to a delete we did not wait for (on kazoo's connection thread:
        it only logs, or asks ``orphans`` to delete the node later)."""
        try:
            outcome = result.get(timeout=0)
            # A transaction answers with a list, holding the error of an operation that failed.
            if isinstance(outcome, list) and any(isinstance(o, NoNodeError) for o in outcome):
                raise NoNodeError(node)
        except NoNodeError:
            log.warning("%s was already gone at release: its session ended", node)
        except UNREACHABLE:
            parent, _, child = node.rpartition("/")
            self.orphans.delete_later(parent, child, session)

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
        if self.orphans.pending:
            self.client.handler.spawn(self.orphans.delete_now)
