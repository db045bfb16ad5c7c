"""Running a lab: the parts it stages on, the two halves, the verdict.

A lab's ``stage(run)`` does the same steps twice, first on the broken
version (``run.broken(...)``), then on the fix (``run.fix(...)``), and
says after each step what the article expects and what it saw
(``run.check(...)``). The lab holds when both halves had steps and every
step agreed with the article; anything else, an error included, is said in
the verdict's reason.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from itertools import count
from pathlib import Path

import redis

import locks
from locks import Backends, LockFactory
from lockshop.cluster.network import Network, unavailable
from lockshop.cluster.redis_servers import RedisServer
from lockshop.cluster.zookeeper_servers import ZooKeeperEnsemble, ZooKeeperServer
from lockshop.workshop.staging.record import BROKEN, FIX, MEASURE, Lab, LabRecord, Step
from shop.app import create_schema
from shop.i18n import _
from shop.store.db import make_engine, make_sessions
from shop.store.models import ProductKind
from shop.store.products import ProductSpec, reset_products


class LabFailed(Exception):
    """A step could not be staged at all (not: a step that disagreed)."""


class LabSkipped(Exception):
    """A part the lab needs is not there (a MariaDB server): the lab says so."""


class Parts:
    """The real servers labs stage on, started on first use and shared by the labs
    of one command (each lab starts from an empty Redis), and a folder per lab."""

    def __init__(self, runtime: Path) -> None:
        self.runtime = runtime
        self._stack = ExitStack()
        self._redis: list[RedisServer] = []
        self._zookeeper: ZooKeeperServer | None = None
        self._network: Network | None = None
        self._folders = count(1)

    def folder(self, label: str) -> Path:
        path = self.runtime / f"{next(self._folders):02d}-{label}"
        path.mkdir(parents=True)
        return path

    def redis(self, servers: int = 1) -> list[RedisServer]:
        """``servers`` independent Redis servers, emptied for this lab."""
        while len(self._redis) < servers:
            server = RedisServer(self.runtime, f"redis-{len(self._redis) + 1}")
            self._redis.append(self._stack.enter_context(server))
        for server in self._redis[:servers]:
            if server.process is None:  # a lab stopped it: start it again, empty
                server.start()
            redis.Redis(port=server.port).flushall()
        return self._redis[:servers]

    def zookeeper(self) -> ZooKeeperServer:
        if self._zookeeper is None:
            server = ZooKeeperServer(self.runtime, "zookeeper")
            self._zookeeper = self._stack.enter_context(server)
        elif self._zookeeper.process is None:  # a lab stopped it: start it again
            self._zookeeper.start()
        return self._zookeeper

    def network(self) -> Network:
        """Hosts on this machine (network namespaces), every link working; the lab is
        skipped, saying why, where they cannot be made (not root, no nftables)."""
        if self._network is None:
            problem = unavailable()
            if problem:
                raise LabSkipped(f"cannot make hosts on this machine: {problem}")
            self._network = self._stack.enter_context(Network())
        self._network.heal()
        return self._network

    def ensemble(self, label: str) -> ZooKeeperEnsemble:
        """Three ZooKeeper servers of their own, for this lab only."""
        return self._stack.enter_context(ZooKeeperEnsemble(self.folder(label), 3))

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Parts:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


#: A lock strategy that stands in for the fix half's own (``lockshop lab ID --lock``): a
#: student's lock, put through the very steps the project's fix passes.
_stand_in: str | None = None


@contextmanager
def standing_in(strategy: str) -> Iterator[None]:
    """Labs run in here use ``strategy`` wherever their fix half uses a lock of its family."""
    global _stand_in
    _stand_in = strategy
    try:
        yield
    finally:
        _stand_in = None


class Stage:
    """One lab being staged: what its steps call."""

    def __init__(self, lab: Lab, parts: Parts, on_step: Callable[[LabRecord, Step], None],
                 on_half: Callable[[str, str], None]) -> None:
        self.lab = lab
        self.parts = parts
        self.record = LabRecord(lab.id, lab.name, lab.title, lab.articles)
        self._half: str | None = None
        self._on_step = on_step
        self._on_half = on_half
        self._opened: list[LockFactory] = []
        #: Whether the stand-in was used: a lab whose fix takes no lock of its family
        #: cannot show anything about it.
        self.stood_in = False

    # --- the halves and their steps -----------------------------------------------

    def broken(self, version: str, how: str) -> None:
        self._start_half(BROKEN, version, how)

    def fix(self, version: str, how: str) -> None:
        if _stand_in is not None:
            how = _("your lock, %(lock)s, standing in for %(version)s (%(how)s)",
                    lock=_stand_in, version=version, how=how)
        self._start_half(FIX, version, how)

    def version(self, strategy: str) -> str:
        """The strategy this half runs where the lab asks for ``strategy``: the stand-in
        (a student's lock of the same family) in the fix half, else ``strategy`` itself."""
        if (self._half == FIX and _stand_in is not None and strategy in locks.names()
                and locks.get(strategy).requires == locks.get(_stand_in).requires):
            self.stood_in = True
            return _stand_in
        return strategy

    def measure(self, versions: str, how: str) -> None:
        self._start_half(MEASURE, versions, how)

    def skip(self, reason: str) -> None:
        """This lab cannot run here (a server it needs is missing): say why."""
        raise LabSkipped(reason)

    def check(self, action: str, *, expected: str, observed: str, agrees: bool) -> bool:
        if self._half is None:
            raise LabFailed(_("a step before run.broken() or run.fix()"))
        step = Step(self._half, len(self.record.steps) + 1, action, expected, observed,
                    bool(agrees))
        self.record.steps.append(step)
        self._on_step(self.record, step)
        return step.agrees

    def _start_half(self, half: str, version: str, how: str) -> None:
        self._half = half
        self.record.versions[half] = _("%(version)s: %(how)s", version=version, how=how)
        self._on_half(half, self.record.versions[half])

    # --- what labs stage on --------------------------------------------------------

    def open_locks(self, strategy: str, **backends) -> LockFactory:
        """A lock factory of ``strategy``, closed when the lab ends."""
        factory = locks.open_factory(self.version(strategy), Backends(**backends))
        self._opened.append(factory)
        if "zk_hosts" in backends:
            deadline = time.monotonic() + 10
            while not factory.available() and time.monotonic() < deadline:
                time.sleep(0.02)
        return factory

    def shop_database(self, *products: ProductSpec):
        """A fresh SQLite shop database holding ``products``; its sessions."""
        folder = self.parts.folder(self.lab.name)
        engine = make_engine(f"sqlite:///{folder / 'shop.db'}")
        create_schema(engine)
        sessions = make_sessions(engine)
        reset_products(sessions, products or (
            ProductSpec("x", "Lab item", ProductKind.ITEM, stock=1),))
        return sessions

    def close(self) -> None:
        for factory in self._opened:
            factory.close()

    # --- the verdict -------------------------------------------------------------------

    def conclude(self) -> None:
        record = self.record
        halves = {step.half for step in record.steps}
        disagreed = [step for step in record.steps if not step.agrees]
        if disagreed:
            first = disagreed[0]
            record.verdict = "does not hold"
            record.reason = _("step %(number)s (%(half)s): expected %(expected)s; observed "
                              "%(observed)s", number=first.number, half=first.half,
                              expected=first.expected, observed=first.observed)
        elif self.lab.measured and halves != {MEASURE}:
            record.verdict = "does not hold"
            record.reason = _("the measured lab measured nothing")
        elif not self.lab.measured and halves != {BROKEN, FIX}:
            record.verdict = "does not hold"
            record.reason = _("the lab did not stage both halves")
        elif _stand_in is not None and not self.stood_in:
            record.verdict = "skipped"
            record.reason = _("its fix half takes no lock of the family of %(lock)s: your "
                              "lock had nothing to stand in for", lock=_stand_in)
        else:
            record.verdict = "holds"


@contextmanager
def running(lab: Lab, parts: Parts, on_step, on_half) -> Iterator[Stage]:
    run = Stage(lab, parts, on_step, on_half)
    started = time.monotonic()
    try:
        yield run
        run.conclude()
    except LabSkipped as why:
        run.record.verdict = "skipped"
        run.record.reason = str(why)
    except Exception as error:  # noqa: BLE001 - a lab that cannot stage says why
        run.record.verdict = "does not hold"
        run.record.reason = f"{type(error).__name__}: {error}"
        run.record.reason += "\n" + "".join(traceback.format_exception(error)[-3:])
    finally:
        run.close()
        run.record.seconds = round(time.monotonic() - started, 1)
