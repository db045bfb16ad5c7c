"""kazoo's own lock tests, run unchanged on lockshop's ZooKeeper locks (a pytest plugin).

``scripts/kazoo-lock-tests zk_fair`` (or ``zk_rw``) runs the ``kazoo/tests/test_lock.py``
that the installed kazoo ships, as it is, with this plugin, which changes only what
kazoo's harness hands the tests:

* its ZooKeeper: one server of ours on a free port (kazoo's harness would start a
  cluster of three on fixed ports from ``ZOOKEEPER_PATH``);
* its client: ``locks.support.zk_client.LeanClient``, the client lockshop's locks use, so the
  harness's faults (``expire_session``, ``lose_connection``: a marker put on the
  client's request queue) reach the session a lock is waiting on;
* ``client.Lock``, ``ReadLock`` and ``WriteLock``: a lockshop lock of the chosen
  strategy on that client, in kazoo's shape (``KazooShapedLock``).

What kazoo's ``Lock`` has and lockshop's contract does not is not run, and the run's
header says so: ``cancel()`` (a lockshop waiter gives up at its timeout), nodes that
outlive their session (``acquire(ephemeral=False)``: a lockshop node always goes with
its session, the lesson of a crashed holder), and kazoo's semaphore and its helpers'
unit tests. ``zk_fair`` has no read lock, so the read/write tests run on ``zk_rw``. One
difference is translated: a release after the session ended raises ``LockLost`` in
lockshop (the holder must know), where kazoo's returns as if all was well.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from unittest import mock

import pytest
from kazoo.exceptions import LockTimeout
from kazoo.protocol.states import KazooState
from kazoo.testing import harness

import locks
from locks import Backends, LockLost
from locks.support.zk_client import LeanClient, PollingHandler
from locks.zk_rw import ZkReadLock
from lockshop.cluster.zookeeper_servers import ZooKeeperServer

#: Tests of kazoo's that ask for what lockshop's locks do not offer, and why.
NOT_OFFERED = {
    "test_lock_cancel": "no cancel(): a lockshop waiter gives up at its timeout",
    "test_lock_ephemeral": "no acquire(ephemeral=False): a node goes with its session",
}
READ_WRITE_TESTS = {"test_read_lock", "test_write_lock", "test_rw_lock"}
#: Longer than any test waits: kazoo's acquire() without a timeout waits for ever.
FOR_EVER = 3600.0


def pytest_addoption(parser) -> None:
    parser.addoption("--lock-strategy", default="zk_fair", choices=["zk_fair", "zk_rw"],
                     help="the lockshop strategy behind kazoo's client.Lock")


def pytest_configure(config) -> None:
    config.lock_strategy = config.getoption("--lock-strategy")
    folder = Path(tempfile.mkdtemp(prefix="kazoo-lock-suite-"))
    config.zookeeper = ZooKeeperServer(folder).start()
    harness.get_global_cluster = lambda: OneServer(config.zookeeper)
    harness.KazooClient = lambda hosts, **options: HarnessClient(
        config.lock_strategy, hosts=hosts, **options)


def pytest_unconfigure(config) -> None:
    server = getattr(config, "zookeeper", None)
    if server is not None:
        server.stop()


def pytest_report_header(config) -> list[str]:
    return [f"kazoo's lock tests on lockshop's {config.lock_strategy}",
            *(f"not run: {name}: {why}" for name, why in NOT_OFFERED.items())]


def pytest_collection_modifyitems(config, items) -> None:
    def applies(item) -> bool:
        if item.cls is None or item.cls.__name__ != "KazooLockTests":
            return False  # the semaphore, and unit tests of kazoo's own helpers
        if item.name in NOT_OFFERED:
            return False
        return config.lock_strategy == "zk_rw" or item.name not in READ_WRITE_TESTS
    kept = [item for item in items if applies(item)]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept


class OneServer:
    """What kazoo's harness asks of its cluster, answered by one server of ours."""

    def __init__(self, server: ZooKeeperServer) -> None:
        self.server = server
        self.running = True

    @property
    def address(self) -> str:
        return self.server.address

    def __iter__(self):
        return iter([self])

    def start(self) -> None:
        pass  # started once, for the whole run

    def terminate(self) -> None:
        pass  # stopped at the end of the run (kazoo stops its cluster after each class)


class HarnessClient(LeanClient):
    """lockshop's client, whose ``Lock`` is a lockshop lock of the run's strategy."""

    def __init__(self, strategy: str, **options) -> None:
        options.setdefault("handler", PollingHandler())
        super().__init__(**options)
        self._strategy = strategy
        self._factory = None
        self._factory_made = threading.Lock()
        # kazoo's client sets these on each client object, not on its class.
        self.Lock = self.WriteLock = self.lockshop_lock
        self.ReadLock = self.lockshop_read_lock

    def lock_factory(self):
        """The strategy's factory on this client (made at the first lock, once started)."""
        with self._factory_made:
            if self._factory is None:
                self._factory = factory_on(self, self._strategy)
            return self._factory

    def lockshop_lock(self, path: str, identifier: str = "") -> KazooShapedLock:
        factory = self.lock_factory()
        return KazooShapedLock(factory, path, identifier, factory.lock_class)

    def lockshop_read_lock(self, path: str, identifier: str = "") -> KazooShapedLock:
        return KazooShapedLock(self.lock_factory(), path, identifier, ZkReadLock)


def factory_on(client: HarnessClient, strategy: str):
    """The strategy's lock factory, sharing ``client`` (and so its session) instead of
    opening a client of its own. The factory never closes it: the harness does."""
    hosts = ",".join(f"{host}:{port}" for host, port in client.hosts)
    with mock.patch("locks.zk_session.new_client", lambda *args, **kwargs: client):
        factory = locks.open_factory(strategy, Backends(zk_hosts=hosts))
    if client.state == KazooState.CONNECTED:
        factory._on_state_change(KazooState.CONNECTED)  # it connected before we listened
    return factory


class KazooShapedLock:
    """A lockshop lock with kazoo's ``Lock`` face: one hold at a time per object, shared
    by the threads that use it; ``identifier`` is its nodes' data, as in kazoo."""

    def __init__(self, factory, path: str, identifier: str, lock_class) -> None:
        self.factory = factory
        self.name = path.strip("/").replace("/", "_")
        self.identifier = identifier
        self.lock_class = lock_class
        self.is_acquired = False
        self.node: str | None = None
        self._held = None
        self._free = threading.Condition()

    def acquire(self, blocking: bool = True, timeout: float | None = None,
                ephemeral: bool = True) -> bool:
        if not ephemeral:
            raise NotImplementedError("lockshop's lock nodes always go with their session")
        with self._free:
            # kazoo's Lock is one hold: while it is held, another acquire waits for it.
            if not self._free.wait_for(lambda: not self.is_acquired,
                                       timeout if blocking else 0):
                return False
            self.is_acquired = True  # ours to try: the object's other users wait
        lock = self.lock_class(self.name, strategy=self.factory.strategy.name,
                               owner=self.identifier, **self.factory.lock_arguments())
        gotten = False
        try:
            gotten = lock.acquire(blocking, FOR_EVER if timeout is None else timeout)
        finally:
            with self._free:
                self.is_acquired = gotten
                if gotten:
                    self._held, self.node = lock, lock.node.rpartition("/")[2]
                self._free.notify_all()
        if not gotten and blocking and timeout is not None:
            raise LockTimeout(f"Failed to acquire lock on {self.name} after {timeout} seconds")
        return gotten

    def release(self) -> bool:
        with self._free:
            if not self.is_acquired:
                return False
            held, self._held, self.node = self._held, None, None
            try:
                held.release()
            except LockLost:
                pass  # kazoo's release does not say that a hold was lost; lockshop's does
            finally:
                self.is_acquired = False
                self._free.notify_all()
        return True

    def contenders(self) -> list[str]:
        """The identifiers of everyone holding or queued, in queue order."""
        view = self.factory.look(self.name)
        return [node["owner"] for node in (*view.holders, *view.waiting)]

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()
