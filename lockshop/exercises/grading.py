"""What a check is, and the harness every check runs on.

A ``Check`` is one lesson's step, turned on the student's lock: what the
grader does, what the article expects, a function that does it and says
what it saw, and a hint for when they differ. ``Grading`` is the one object a
check is given: it holds the student's lock class and the grader's own servers
(a Redis or a ZooKeeper of its own, on a free port, in a folder of its own),
makes the student's locks on them (plain, or on a client the grader can step
into: ``lockshop.cluster.wire``), starts the student's lock in holder
processes of its own (``lockshop.cluster.holder``) to kill or pause, and runs
another owner in a thread of its own. Every helper a check needs is a method
of it, as every helper of MIT 6.5840's tests hangs on its one ``cfg``.

For the exercises graded out of process (``grader.out_of_process``) the class is not
here but in a lock host (``remote_locks``): ``factory()`` hands out stubs that read as
the lock does, the servers ask for a password only the grader's proxies know, and every
process of the student's reaches them through one proxy per server, which is where a
check watches, counts and steps in (``watch``). On ZooKeeper each factory reaches the
server through a proxy of its own (``lockshop.cluster.zookeeper_wire``), from which the
grader learns its session (to end it) and the children's watches it set; the nodes'
watches and ephemeral nodes it reads from the server. ZooKeeper asks for no password: the
server listens on 127.0.0.2 instead (``network.BEHIND_PROXIES``), which the room's
sandbox walls off from the student's user, and the student's other processes share a
proxy of the grader's (``students_zk_hosts``). A lock table's rows it reads from
the grading's SQLite file, which the student's processes write (``databases.students_file``).
What a check counts is counted here.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import redis

from locks import Backends, DistributedLock, LockFactory, LockLost
from lockshop.cluster.holder import KEY_PREFIX, Holder, held, student_factory
from lockshop.cluster.network import BEHIND_PROXIES
from lockshop.cluster.processes import free_port
from lockshop.cluster.redis_servers import RedisServer
from lockshop.cluster.thread_ids import in_a_thread
from lockshop.cluster.wire import RedisProxy
from lockshop.cluster.zookeeper_servers import ZooKeeperServer
from lockshop.cluster.zookeeper_sessions import end_session
from lockshop.cluster.zookeeper_wire import ZooKeeperProxy
from lockshop.exercises import databases, remote_locks
from lockshop.exercises.remote_locks import LockHost, as_student
from shop.i18n import _, yes_no

#: The lease the grader gives a student's lock: short, so that waiting for one to run
#: out costs little, and long next to a command on this machine's loopback.
LEASE_MS = 600
#: A ZooKeeper session's timeout: the least the grader's server grants is one second.
SESSION_MS = 1500
#: How long one check may take before the grader calls the student's lock hung.
CHECK_SECONDS = 40.0
#: The holder's flag for a crash right after its first write of the lock's key.
CRASH_AFTER_FIRST_WRITE = "--crash-after-first-write"
#: The "redlock" backend's servers: independent Redis servers, each of its own.
REDLOCK_SERVERS = 5
#: Redlock's lease: a per-server timeout must be far shorter, and a few still fit in it.
REDLOCK_LEASE_MS = 2000


class NotDone(Exception):
    """A skeleton's TODO that is still there (its ``NotImplementedError``)."""


@dataclass(frozen=True)
class NotApplicable:
    """What a check answers, in place of passed, when its lesson does not apply to this
    lock (a release that never reads has no gap between a read and a delete): neither
    ✓ nor ✗, and counted as neither."""

    see: str  # the lesson whose check does apply: "C11"


@dataclass(frozen=True)
class Check:
    """One lesson's step, run on the student's lock."""

    lesson: str  # "C11"
    action: str  # what the grader does, in one line
    expected: str  # what a right lock shows
    hint: str  # what to change when it does not, without reading the grader
    #: -> (what was observed, passed), or (what was observed, NotApplicable(...))
    run: Callable[[Grading], tuple[str, bool | NotApplicable]]
    #: Shop instances and a sale: the slow one, run once per grading.
    sale: bool = False


class Grading:
    """The student's lock on the grader's servers: makes its locks, holders and other
    owners, and every helper a check calls."""

    def __init__(self, lock_class: type[DistributedLock] | None, spec: str, backend: str,
                 runtime: Path, *, database_url: str | None = None,
                 host: LockHost | None = None) -> None:
        #: The student's class, loaded here; None when it lives in ``host`` instead (an order
        #: step's: a stub whose ``place`` runs it there, ``remote_steps.RemoteStep``).
        self.lock_class = lock_class
        #: The student's lock in a process of its own (``remote_locks``), or None: the
        #: class runs in this process (an exercise not yet graded out of process).
        self.host = host
        self.spec = spec  # FILE:Class, as the shop instances and holders load it
        #: The servers it starts (``Exercise.backend``): "redis", "zookeeper", "redlock"
        #: (REDLOCK_SERVERS Redis servers), or a database's (``databases.SERVERS``).
        self.backend = backend
        self.runtime = runtime
        #: A Redis or table lock's lease; Redlock's; a ZooKeeper lock's session timeout (the
        #: server's least).
        self.lease_ms = {"zookeeper": SESSION_MS, "redlock": REDLOCK_LEASE_MS}.get(backend,
                                                                                  LEASE_MS)
        self._stack = ExitStack()
        self._factories: list[LockFactory] = []
        self.redis_server: RedisServer | None = None
        self.zookeeper: ZooKeeperServer | None = None
        #: The database of a table lock's or an order step's exercise (``databases``).
        self.database_url: str | None = None
        #: The one it was given to use (the room's), else None: it makes its own.
        self._given_database = database_url
        #: Redlock's independent servers (the first is also ``redis_server``).
        self.redis_servers: list[RedisServer] = []
        #: Starts servers again after a check killed them (``start_server``).
        self._keeper: ThreadPoolExecutor | None = None
        self._names = iter(range(1, 1_000_000))
        self._inspector: redis.Redis | None = None
        self._students_proxies: dict[int, RedisProxy] = {}
        self._zookeeper_proxies: list[ZooKeeperProxy] = []
        #: The one the student's other processes share (``students_zk_hosts``).
        self._students_zookeeper: ZooKeeperProxy | None = None

    def __enter__(self) -> Grading:
        # With the lock in a host, every Redis of the grading (Redlock's five too) asks for
        # a password the host never learns: it reaches them through the grader's proxies
        # only (``students_url``), one per server, which a server's kill, pause or restart
        # leaves in place.
        password = secrets.token_hex(16) if self.host is not None and self.proxied else None
        if self.backend == "redis":
            self.redis_server = self._stack.enter_context(
                RedisServer(self.runtime, "redis", password=password))
        elif self.backend in databases.SERVERS:
            # With the lock in a host run as the student's user, its file is theirs to
            # write too (the rows are what the lock does); the grader reads them there.
            self.database_url = self._stack.enter_context(databases.database_for(
                self.backend, self.runtime, self._given_database,
                for_students=self.host is not None and remote_locks.STUDENT_USER is not None))
        elif self.backend == "redlock":
            self.redis_servers = [
                self._stack.enter_context(RedisServer(self.runtime, f"redis{n}",
                                                      password=password))
                for n in range(1, REDLOCK_SERVERS + 1)]
            self.redis_server = self.redis_servers[0]
        else:
            # On the address the room's sandbox walls off from the student's user: with
            # the lock in a host, the grader's proxies are its only way in (``backends``).
            # Without a sandbox (the command line's grading) the address is loopback all
            # the same, so one place serves both and every ZooKeeper test runs it.
            self.zookeeper = self._stack.enter_context(ZooKeeperServer(
                self.runtime, "zookeeper", host=BEHIND_PROXIES,
                port=free_port(BEHIND_PROXIES.address)))
        return self

    def __exit__(self, *exc_info) -> None:
        # A host's factories go with it (whoever started it closes it), hung or not: they
        # are not asked to close one by one.
        for factory in self._factories if self.host is None else ():
            try:
                factory.close()
            except Exception:  # noqa: BLE001 - a student's factory that cannot close
                pass
        for proxy in (*self._students_proxies.values(), *self._zookeeper_proxies):
            proxy.close()
        if self._inspector is not None:
            self._inspector.close()
        self._stack.close()
        if self._keeper is not None:
            self._keeper.shutdown()

    def start_server(self, server: RedisServer) -> None:
        """Start one of the grader's servers again (after a check killed or stopped it),
        from a thread that lives as long as the grading: a server dies with the thread
        that started it (its parent-death signal), and a check's thread ends with it."""
        if self._keeper is None:
            self._keeper = ThreadPoolExecutor(1, thread_name_prefix="grader-servers")
        self._keeper.submit(server.start).result()

    # --- where things live ---------------------------------------------------------------

    def backends(self, lease_ms: int | None = None) -> Backends:
        """Where the student's code finds the servers (its lock, its holders, its shop
        instances): with a host, the grader's proxies to them."""
        return Backends(redis_url=self.students_url(self.redis_server),
                        redis_urls=tuple(map(self.students_url, self.redis_servers)),
                        zk_hosts=self.students_zk_hosts(),
                        database_url=self.database_url, lease_ms=lease_ms or self.lease_ms)

    def students_zk_hosts(self) -> str | None:
        """The ZooKeeper address the student's processes are given (holders, shop
        instances): with a host, one proxy of the grader's that they all share (the server
        is walled off from their user, ``network.BEHIND_PROXIES``); else the server's own.
        A factory's locks get a proxy of their own instead (``factory``)."""
        if self.zookeeper is None:
            return None
        if self.host is None:
            return self.zookeeper.address
        if self._students_zookeeper is None:
            self._students_zookeeper = self._zookeeper_proxy()
        return self._students_zookeeper.address

    def _zookeeper_proxy(self, *, one_client: bool = False) -> ZooKeeperProxy:
        proxy = ZooKeeperProxy((self.zookeeper.host.address, self.zookeeper.port),
                               one_client=one_client)
        self._zookeeper_proxies.append(proxy)
        return proxy

    def servers_backends(self, lease_ms: int | None = None) -> Backends:
        """The servers themselves (Redlock's five too), password and all, for the sale's
        shop instances: the sale is every lock exercise's last check, so what they could
        learn of the password comes after every check that watches the traffic; and a
        sale's three instances through the proxies in this process were too slow on a
        loaded machine. Not ZooKeeper: its server is walled off from the student's user,
        so they reach it through the grader's shared proxy (``students_zk_hosts``)."""
        return replace(self.backends(lease_ms),
                       redis_url=self.redis_server.url if self.redis_server else None,
                       redis_urls=tuple(server.url for server in self.redis_servers))

    def fresh_name(self, label: str) -> str:
        """A lock name no earlier check used: checks never see each other's keys."""
        return f"{label}-{next(self._names)}"

    def redis(self) -> redis.Redis:
        """A plain client of the grader's Redis, for looking at keys (one, kept)."""
        if self._inspector is None:
            self._inspector = redis.Redis.from_url(self.redis_server.url)
        return self._inspector

    def key_of(self, name: str) -> str:
        return KEY_PREFIX + name

    # --- the student's locks ---------------------------------------------------------------

    def factory(self, lease_ms: int | None = None, *, watched_key: str | None = None
                ) -> LockFactory:
        """A factory of the student's locks; with ``watched_key``, on a ``WatchedRedis``.
        The same factory a holder process opens (``student_factory``)."""
        if self.host is not None:
            backends, proxy = self.backends(lease_ms), None
            if watched_key is not None:
                # Its connections say their name, so that the proxy can say what this
                # factory's locks sent; it counts and steps in on every connection.
                name = f"watched-{next(self._names)}"
                proxy = self.watch(watched_key, client_name=name)
                backends = replace(backends, redis_url=f"{backends.redis_url}?client_name={name}")
            if self.zookeeper is not None:  # a proxy of its own: its session is the proxy's
                proxy = self._zookeeper_proxy(one_client=True)
                backends = replace(backends, zk_hosts=proxy.address)
            factory = self.host.factory(backends, client=proxy)
        else:
            factory = student_factory(self.lock_class, self.spec, self.backends(lease_ms),
                                      watched_key=watched_key)
        self._factories.append(factory)
        return factory

    # --- a ZooKeeper lock's session, learned without asking the lock ----------------------

    def session_of(self, factory) -> int | None:
        """The ZooKeeper session of ``factory``'s client now: with a host, as the server
        gave it on the factory's own proxy."""
        if self.host is not None:
            return factory.client.session
        return (factory.client.client_id or (None,))[0]

    def children_watches(self) -> dict[int, set[str]] | None:
        """With a host, every session and the paths whose children it watches, as the
        grader's proxies saw the server set them on the connections open now: every
        proxy's, so that a watch set through any of them (another lock's, the one the
        student's other processes share) is counted for the session that set it. Without
        a host, None: the sessions are the grader's own clients (``children_watched``)."""
        if self.host is None:
            return None
        found: dict[int, set[str]] = {}
        for proxy in self._zookeeper_proxies:
            for session, paths in proxy.watching().items():
                found.setdefault(session, set()).update(paths)
        return found

    def children_watched(self, factory) -> list[str]:
        """The paths whose children ``factory``'s session waits to hear about (the server's
        four-letter words list only the nodes' watches): with a host, as its proxy saw the
        server set them; else from the kazoo client's ``_child_watchers`` (none if a later
        kazoo keeps them elsewhere)."""
        if self.host is not None:
            return factory.client.children_watched()
        watchers = dict(getattr(factory.client, "_child_watchers", {}))
        return [path for path, callbacks in watchers.items() if callbacks]

    def expire_session(self, factory) -> None:
        """End ``factory``'s ZooKeeper session on the server, as a timeout would, with its
        id and password (with a host, as its proxy read them from the server's answer), and
        wait until its client has opened a new one (kazoo hears of it on its next contact),
        which holds nothing."""
        session = self.end_session_of(factory)
        self.until(lambda: (self.session_of(factory) or session) != session, seconds=10)

    def end_session_of(self, factory) -> int:
        """End ``factory``'s ZooKeeper session on the server, as a timeout would, with its
        id and password (with a host, as its proxy read them from the server's answer), at
        once: its client has not heard yet. The session's id."""
        if self.host is not None:
            proxy = factory.client
            session, password = proxy.session, proxy.password
        else:
            session, password = factory.client.client_id
        end_session(session, password, self.zookeeper.address)
        return session

    @property
    def proxied(self) -> bool:
        """Whether the student's processes reach the servers through the grader's proxies
        (a lock host's: on one Redis, where checks watch the traffic, and on Redlock's
        five, whose traffic no check watches but which the student's code must not be
        able to reconfigure, stop or read others' traffic on)."""
        return self.host is not None and self.backend in ("redis", "redlock")

    def watch(self, key: str, client_name: str | None = None) -> RedisProxy:
        """The proxy every process of the student's reaches the grader's (first) Redis
        through, watching ``key`` from now on (``lockshop.cluster.wire.RedisProxy``): what
        the student's code sends on it, by whichever connection, seen from outside."""
        self.students_url(self.redis_server)
        return self._students_proxies[self.redis_server.port].watch(key, client_name)

    def students_url(self, server: RedisServer | None) -> str | None:
        """The URL the student's code is given for ``server``: with a host, the one proxy
        to it that every process of the student's shares (the server's password, which
        only the proxy knows, keeps them from going round it); else the server's own."""
        if server is None:
            return None
        if self.host is None or not self.proxied:
            return server.url
        if server.port not in self._students_proxies:
            self._students_proxies[server.port] = RedisProxy(
                (server.host.address, server.port), password=server.password)
        return self._students_proxies[server.port].url

    def try_in_new_thread(self, factory, name: str, wanted_id: int | None = None
                          ) -> tuple[bool, int]:
        """A lock of ``factory`` on ``name`` tried once (blocking=False) in a new thread
        that then ends without releasing, in the process the lock lives in; with
        ``wanted_id``, in one Python gave that dead thread's id
        (``lockshop.cluster.thread_ids``): what the try returned, and the thread's id."""
        if self.host is not None:
            return factory.try_in_new_thread(name, wanted_id)
        return in_a_thread(lambda: factory.lock(name).acquire(blocking=False),
                           wanted_id=wanted_id)

    def in_recycled_threads(self, factory, name: str, later: int) -> list[bool]:
        """``try_in_new_thread`` once, then in ``later`` threads each given that first
        thread's id: what each try returned."""
        first, dead_id = self.try_in_new_thread(factory, name)
        return [first, *(self.try_in_new_thread(factory, name, dead_id)[0]
                         for _thread in range(later))]

    def lock(self, name: str, *, timeout: float = 5.0, lease_ms: int | None = None,
             factory: LockFactory | None = None) -> DistributedLock:
        return (factory or self.factory(lease_ms)).lock(name, timeout=timeout)

    def release_quietly(self, lock: DistributedLock,
                        allowed: type[Exception] | tuple[type[Exception], ...] = Exception
                        ) -> None:
        """Release, saying nothing of what ``allowed`` the lock raises (by default anything:
        the grader's own clean-up; ``LockLost`` where the check reads the release's effect
        from the server, and any other error of the student's lock is its to show)."""
        try:
            lock.release()
        except allowed:
            pass

    # --- another owner: a thread of its own ----------------------------------------------------

    def in_thread(self, function: Callable, *args, timeout: float = CHECK_SECONDS):
        """``function(*args)`` in a thread of its own (another owner): its result or error."""
        return Background(function, *args).result(timeout)

    def take(self, factory: LockFactory, name: str, *, timeout: float = 5.0,
             blocking: bool = True) -> DistributedLock | None:
        """A lock on ``name`` made and acquired in a thread of its own, so by an owner of its
        own (a lock's owner is the thread that made it): the lock, or None if refused."""
        def attempt() -> DistributedLock | None:
            lock = factory.lock(name, timeout=timeout)
            return lock if lock.acquire(blocking=blocking) else None
        return self.in_thread(attempt, timeout=timeout + CHECK_SECONDS)

    def until(self, condition: Callable[[], object], seconds: float, step: float = 0.01
              ) -> object:
        """Poll ``condition`` until it is true or ``seconds`` pass; its last value."""
        pause = threading.Event()
        for _attempt in range(max(1, int(seconds / step))):
            value = condition()
            if value:
                return value
            pause.wait(step)
        return condition()

    def patience(self) -> float:
        """How long another owner waits for a dead holder's lock: three leases and a second."""
        return 3 * self.lease_ms / 1000 + 1

    def next_owner_waits(self, name: str) -> float | None:
        """How long another owner waited for the lock (at most ``patience``), or None if it
        never got it."""
        def wait() -> float | None:
            lock = self.lock(name, timeout=self.patience())
            started = time.monotonic()
            taken = lock.acquire()
            waited = time.monotonic() - started
            if taken:
                self.release_quietly(lock)
            return waited if taken else None
        return self.in_thread(wait, timeout=self.patience() + 10)

    # --- a holder: a process of its own ---------------------------------------------------------

    def start_holder(self, name: str, *flags: str) -> Holder:
        """The student's lock held by a process of its own (``lockshop.cluster.holder``),
        which the grader can kill or pause, run as the student's user. With
        ``--crash-after-first-write`` and the lock in a host, the grader's proxy kills it
        right after its first write of the key (the holder is not asked to)."""
        backends = self.backends()
        if self.host is not None and CRASH_AFTER_FIRST_WRITE in flags:
            flags = tuple(flag for flag in flags if flag != CRASH_AFTER_FIRST_WRITE)
            return self._crashing_holder(name, self.watch(self.key_of(name)), backends, flags)
        return self._holder(name, backends, flags)

    def _crashing_holder(self, name: str, proxy: RedisProxy, backends: Backends,
                         flags: tuple[str, ...]) -> Holder:
        started: list[Holder] = []
        ready, crashed = threading.Event(), threading.Event()

        def crash(kind: str, command: str) -> None:
            if kind in ("write", "script") and not crashed.is_set():
                crashed.set()  # once: the next owner's writes of the key are no crash
                ready.wait(10)
                started[0].kill_now()  # before its answer reaches it: a crash right there

        proxy.after = crash
        started.append(self._holder(name, backends, flags))
        ready.set()
        return started[0]

    def _holder(self, name: str, backends: Backends, flags: tuple[str, ...]) -> Holder:
        fields = {"redis_url": backends.redis_url, "redis_urls": list(backends.redis_urls),
                  "zk_hosts": backends.zk_hosts, "database_url": backends.database_url,
                  "lease_ms": backends.lease_ms}
        return Holder("--lock", self.spec, "--backends", json.dumps(fields), "--name", name,
                      *flags, launcher=as_student)

    def first_line(self, holder: Holder, seconds: float = 15.0) -> str:
        """The holder's next line ("held <fencing token>"), or what it said on dying."""
        line = holder.next_line(seconds)
        if line is not None:
            return line
        problem = holder.last_words()
        if problem is not None:
            return _("it exited (status %(code)s): %(problem)s", code=holder.returncode,
                     problem=_last_words(problem) if problem else _("it said nothing"))
        return _("no answer")

    def stop_holder(self, holder: Holder) -> None:
        """SIGKILL: a crash, with no chance to clean up."""
        holder.kill()

    def holder_killed(self, name: str, *, after_seconds: float = 0.0) -> str | None:
        """A holder process takes ``name``, holds it ``after_seconds``, and is killed
        (SIGKILL): None when that went as planned, else what went wrong, to be shown."""
        holder = self.start_holder(name)
        said = self.first_line(holder)
        if held(said) and after_seconds:
            time.sleep(after_seconds)  # a live holder's time: its watchdog renews meanwhile
        self.stop_holder(holder)
        if not held(said):
            return _("the holder did not get the lock: %(said)s", said=said)
        return None


def release_said(lock) -> str:
    """Release ``lock`` (another of the student's lock's errors is the lock's to show):
    "returned", or "raised LockLost", in the reader's language."""
    try:
        lock.release()
    except LockLost:
        return _("raised LockLost")
    return _("returned")


def inner_release_verdict(entered: bool, during: bool, after: bool) -> tuple[str, bool]:
    """C27's verdict on a holder that entered twice: the inner release must keep the lock
    (no other owner gets in ``during``), the outer one free it (one gets in ``after``)."""
    if not entered:
        return _("the holder could not enter twice"), False
    return _("after the inner release another owner got in: %(during)s; after the outer "
             "release: %(after)s", during=yes_no(during), after=yes_no(after)), \
        not during and after


def _last_words(line: str) -> str:
    """A dead holder's last line, said to the reader: a TODO left in the student's file is
    said as the grader says it elsewhere, in the skeleton's own words."""
    kind, _colon, message = line.partition(": ")
    if kind == "NotImplementedError":
        return _("not written yet: %(todo)s", todo=message or _("a method is not written yet"))
    return line


class Background:
    """``function(*args)`` in a daemon thread of its own: a student's lock may raise or
    hang there, and neither escapes; ``result()`` hands back its value or its error,
    ``outcome()`` both without raising."""

    def __init__(self, function: Callable, *args, name: str | None = None) -> None:
        self._outcome: list = []
        self.thread = threading.Thread(target=self._run, args=(function, args), daemon=True,
                                       name=name)
        self.thread.start()

    def _run(self, function: Callable, args: tuple) -> None:
        try:
            self._outcome.append(("ok", function(*args)))
        except BaseException as error:  # noqa: BLE001 - handed back by result()
            self._outcome.append(("error", error))

    def done(self) -> bool:
        return not self.thread.is_alive()

    def failed(self) -> bool:
        """It has ended with an error."""
        return bool(self._outcome) and self._outcome[0][0] == "error"

    def join(self, timeout: float = CHECK_SECONDS) -> None:
        self.thread.join(timeout)

    def outcome(self, timeout: float = CHECK_SECONDS) -> tuple[str, object] | None:
        """("ok", value) or ("error", error) once it ends within ``timeout``; else None."""
        self.thread.join(timeout)
        return self._outcome[0] if self._outcome else None

    def result(self, timeout: float = CHECK_SECONDS):
        outcome = self.outcome(timeout)
        if outcome is None:
            raise TimeoutError(f"did not return within {timeout:g} s")
        kind, value = outcome
        if kind == "error":
            raise value
        return value
