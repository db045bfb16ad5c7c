"""The grader's side of the lock host: the student's lock in a process of its own, and
stubs that read as the lock does.

``LockHost`` starts ``lockshop.exercises.lock_host`` on the student's file, as the
student's user when the grader has one to give (``STUDENT_USER``: in the room's sandbox,
``nobody``, while the grader runs as a user of its own; see ``lockshop.room.inside``),
and speaks ``lock_protocol`` with it over a socket pair. ``RemoteFactory`` and
``RemoteLock`` have the methods a check calls (``factory.lock(name)``, ``acquire``,
``release``, ``ensure_held``, ``fencing_token``...), so the checks read as they did when
the lock ran in the grader's own process: each call is sent to the host, in the host
thread named for the grader's thread that calls it (an owner per thread, as before), and
its answer or error comes back. An error the lock raised comes back as the exception of
that name where the grader knows it (``LockNotOwned``, ``LockLost``,
``NotImplementedError``...), else as a ``RaisedInHost`` named after it.

What can go wrong is the host's, and said as the lock's: a host that dies mid-call
fails the call (``HostGone``), one that hangs hangs only the check's own thread, which the
grader's time limit ends. Nothing the host sends is run or unpickled: a line that is not
an answer to a pending request is dropped.
"""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import weakref
from concurrent.futures import Future
from dataclasses import asdict

from locks import Backends
from locks.custom import LockClassError
from locks.errors import BackendUnavailable, LockError, LockLost, LockNotAcquired, LockNotOwned
from lockshop.exercises.lock_protocol import MAX_LINE, decode, encode
from shop.i18n import _

#: The uid (and gid) the student's processes run as, or None: as the grader itself (a
#: student's own ``lockshop exercise check``, on their own machine). Set by the room's
#: grading inside the sandbox (``lockshop.room.inside``).
STUDENT_USER: int | None = None
#: How long a host has to load the student's class.
LOAD_SECONDS = 30.0

_KNOWN = {error.__name__: error for error in (
    LockNotOwned, LockLost, LockNotAcquired, BackendUnavailable, LockError,
    NotImplementedError, TimeoutError, ValueError, RuntimeError, KeyError)}


class HostGone(RuntimeError):
    """The student's process ended (or its channel closed) before it answered."""


class RaisedInHost(Exception):
    """An error the student's lock raised that the grader has no class of its own for."""


def as_student(argv: list[str]) -> list[str]:
    """``argv`` run as the student's user (``STUDENT_USER``), with no capabilities and no
    way to gain any; as it is when there is none."""
    if STUDENT_USER is None:
        return list(argv)
    # No capability left in any set it could use, and no_new_privs: no setuid binary or
    # file capability can give one back. (Its bounding set stays the grader's: emptying
    # it needs a capability the grader is not given.)
    return ["setpriv", f"--reuid={STUDENT_USER}", f"--regid={STUDENT_USER}",
            "--clear-groups", "--inh-caps=-all", "--ambient-caps=-all", "--no-new-privs",
            "--", *argv]


_names = threading.local()
_numbers = itertools.count(1)
#: The hosts alive, told when a thread of the grader's ends.
_HOSTS: weakref.WeakSet[LockHost] = weakref.WeakSet()


class _ThreadMark:
    """Kept in a thread's locals: it goes when the thread ends, and says so."""

    def __init__(self, name: str) -> None:
        self.name = name


def thread_name() -> str:
    """A name for the calling thread, never given to another (unlike its ident). When the
    thread ends, every host ends its own thread of that name: the student's lock sees
    threads come and go as the grader's do (Python then gives a new thread a dead one's
    id there too, as it would in one process)."""
    mark = getattr(_names, "mark", None)
    if mark is None:
        mark = _names.mark = _ThreadMark(f"t{next(_numbers)}")
        weakref.finalize(mark, _thread_ended, mark.name)
    return mark.name


def _thread_ended(name: str) -> None:
    for host in list(_HOSTS):
        host.thread_ended(name)


class LockHost:
    """One student's class in one process, and the requests in flight to it."""

    #: The module the host runs (an order step's: ``step_host``).
    MODULE = "lockshop.exercises.lock_host"

    def __init__(self, spec: str, *, env: dict[str, str] | None = None,
                 election: bool = False, guard: bool = False) -> None:
        self.spec = spec
        ours, theirs = socket.socketpair()
        self._channel = ours
        try:
            self.process = subprocess.Popen(
                as_student([sys.executable, "-m", self.MODULE, spec,
                            "--channel", str(theirs.fileno()),
                            *(["--election"] if election else []),
                            *(["--guard"] if guard else [])]),
                stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),),
                env={**(env or os.environ), "PYTHONUNBUFFERED": "1"},
                start_new_session=True)
        finally:
            theirs.close()
        self._ids = itertools.count(1)
        self._pending: dict[int, Future] = {}
        self._guard = threading.Lock()
        self._writing = threading.Lock()
        self._names = itertools.count(1)
        self._threads: set[str] = set()
        self._greeting: Future = Future()
        self._reader = threading.Thread(target=self._read, daemon=True, name="lock-host")
        self._reader.start()
        try:
            greeting = self._greeting.result(LOAD_SECONDS)
        except TimeoutError:
            self.close()
            raise LockClassError(_("%(spec)s: your file did not load in %(seconds)s s",
                                   spec=spec, seconds=f"{LOAD_SECONDS:g}")) from None
        if "load_error" in greeting:
            self.close()
            raise LockClassError(str(greeting["load_error"]))
        _HOSTS.add(self)
        ready = greeting.get("ready") or {}
        #: The class's name and its family ("redis", "redlock"...), as the host said them.
        self.class_name = str(ready.get("class", "?"))
        self.family = str(ready.get("family", "?"))

    def _read(self) -> None:
        reader = self._channel.makefile("rb")
        try:
            while line := reader.readline(MAX_LINE + 1):
                try:
                    message = decode(line)
                except ValueError:
                    continue
                if not self._greeting.done():
                    if "ready" in message or "load_error" in message:
                        self._greeting.set_result(message)
                    continue
                if "event" in message:
                    self.event(message)
                    continue
                with self._guard:
                    waiting = self._pending.pop(message.get("id"), None) \
                        if isinstance(message.get("id"), int) else None
                if waiting is not None:
                    waiting.set_result(message)
        except (OSError, ValueError):
            pass
        finally:
            self._gone()

    def event(self, message: dict) -> None:
        """An event line the host sent about a request in flight (``lock_protocol``): a
        lock's host sends none, so it is dropped; an order step's routes it to its buyer."""

    def _gone(self) -> None:
        try:
            status = self.process.wait(5)
        except subprocess.TimeoutExpired:
            status = None
        error = HostGone(_("your lock's process ended (exit status %(status)s)",
                           status=status))
        if not self._greeting.done():
            self._greeting.set_result({"load_error": f"{self.spec}: {error}"})
        with self._guard:
            pending, self._pending = self._pending, {}
        for waiting in pending.values():
            waiting.set_exception(error)

    def call(self, op: str, **fields) -> object:
        """Send ``op`` from the calling thread's host thread; its value, or the error the
        lock raised, raised here."""
        number = next(self._ids)
        answer: Future = Future()
        thread = thread_name()
        with self._guard:
            self._pending[number] = answer
            self._threads.add(thread)
        try:
            with self._writing:
                self._channel.sendall(encode({"id": number, "thread": thread, "op": op,
                                              **fields}))
        except OSError:
            with self._guard:
                self._pending.pop(number, None)
            raise HostGone(_("your lock's process is gone")) from None
        message = answer.result()
        if "error" in message:
            raise raised(message["error"])
        return message.get("value")

    def thread_ended(self, thread: str) -> None:
        """The grader's thread ``thread`` has ended: so does the host's (no answer)."""
        with self._guard:
            if thread not in self._threads:
                return
            self._threads.discard(thread)
        try:
            with self._writing:
                self._channel.sendall(encode({"thread": thread, "op": "end_thread"}))
        except OSError:
            pass

    def factory(self, backends: Backends, *, client=None) -> RemoteFactory:
        number = f"f{next(self._names)}"
        fields = asdict(backends)
        fields["redis_urls"] = list(backends.redis_urls)
        fields["faults"] = list(backends.faults)
        self.call("factory", factory=number, backends=fields)
        return RemoteFactory(self, number, client)

    def close(self) -> None:
        """End the host and every process it started (its process group)."""
        try:
            self._channel.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._channel.close()
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.process.kill()
        self.process.wait()

    def __enter__(self) -> LockHost:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


#: The fields each lock error needs, and their types. An answer's fields are believed
#: only whole: a ``LockNotAcquired`` without a number for its timeout is made without
#: fields (its text alone, which ``say_lock_error`` says as it came), never half made,
#: for the grader reads these fields when it says the error.
_FIELDS_OF = {
    LockNotAcquired: {"name": str, "timeout": (int, float)},
    LockNotOwned: {"name": str, "owner": (str, type(None))},
    LockLost: {"name": str, "reason": str},
    BackendUnavailable: {"name": str, "backend": str},
}


def raised(error: object) -> BaseException:
    """The exception an error answer stands for (its text, and a lock error's fields
    when they are all there and of their types)."""
    if not isinstance(error, dict):
        return RaisedInHost(_("an error the grader could not read"))
    name, message = str(error.get("type", "Exception"))[:100], str(error.get("message", ""))
    known = _KNOWN.get(name)
    if known is not None:
        exception = known.__new__(known)
        Exception.__init__(exception, message)
        for key, value in _whole_fields(known, error.get("fields")).items():
            setattr(exception, key, value)
    else:
        kind = type(name if name.isidentifier() else "Exception", (RaisedInHost,), {})
        exception = kind(message)
    line = error.get("line")
    if isinstance(error.get("file"), str) and isinstance(line, int):
        exception.where = (error["file"][:300], line)
    return exception


def _whole_fields(kind: type, fields: object) -> dict:
    """``fields`` (untrusted) as ``kind`` needs them, or none at all."""
    wanted = _FIELDS_OF.get(kind)
    if wanted is None or not isinstance(fields, dict):
        return {}
    whole = {}
    for key, types in wanted.items():
        value = fields.get(key)
        if not isinstance(value, types) or isinstance(value, bool):
            return {}
        whole[key] = value[:300] if isinstance(value, str) else value
    return whole


class RemoteFactory:
    """A factory of the student's locks, in the host. ``client``: the proxy its traffic
    goes through, where the grader reads it: on Redis, watching the key a check watches
    (``lockshop.cluster.wire.RedisProxy``); on ZooKeeper, this factory's own, which knows
    its session and its children's watches (``lockshop.cluster.zookeeper_wire``); or None."""

    def __init__(self, host: LockHost, number: str, client=None) -> None:
        self.host, self.number, self.client = host, number, client
        self._locks = itertools.count(1)

    def lock(self, name: str, *, timeout: float = 5.0) -> RemoteLock:
        return self._made("lock", name, timeout)

    def read_lock(self, name: str, *, timeout: float = 5.0) -> RemoteLock:
        """A read/write lock's read half (its factory's ``read_lock``)."""
        return self._made("read_lock", name, timeout)

    def _made(self, op: str, name: str, timeout: float) -> RemoteLock:
        number = f"{self.number}.{next(self._locks)}"
        self.host.call(op, factory=self.number, lock=number, name=name,
                       timeout=float(timeout))
        return RemoteLock(self.host, number, name)

    def try_in_new_thread(self, name: str, wanted_id: int | None = None
                          ) -> tuple[bool, int]:
        """A lock on ``name`` tried once (blocking=False) in a new thread of the host that
        then ends (``lockshop.cluster.thread_ids.in_a_thread``, there); with ``wanted_id``,
        in one given that (dead) thread's id: what the try returned, and the thread's id."""
        answer = self.host.call("try_in_new_thread", factory=self.number, name=name,
                                wanted_id=wanted_id)
        if not isinstance(answer, dict) or not isinstance(answer.get("thread_id"), int):
            raise RaisedInHost(_("your lock's process gave no thread id"))
        return bool(answer.get("taken")), answer["thread_id"]

    def candidate(self, group: str) -> RemoteCandidate:
        """One of the student's election candidates in ``group``, on this factory's
        session, started (a host started with ``election``)."""
        number = f"{self.number}.{next(self._locks)}"
        self.host.call("candidate", factory=self.number, candidate=number, group=group)
        return RemoteCandidate(self.host, number)

    def close(self) -> None:
        try:
            self.host.call("close", factory=self.number)
        except Exception:  # noqa: BLE001 - the grader's clean-up; the host may be gone
            pass


class RemoteCandidate:
    """One of the student's leader election candidates, in the host: what the shop's job
    guard asks of an election (``locks.zk_election.Candidate``)."""

    def __init__(self, host: LockHost, number: str) -> None:
        self.host, self.number = host, number

    def is_leader(self) -> bool:
        return bool(self.host.call("is_leader", candidate=self.number))

    def ensure_leader(self) -> None:
        self.host.call("ensure_leader", candidate=self.number)

    def stop(self) -> None:
        self.host.call("stop", candidate=self.number)

    @property
    def failed(self) -> BaseException | None:
        """What ended its campaign (the error, as the host said it), or None."""
        said = self.host.call("failed", candidate=self.number)
        return None if said is None else raised(said)

    def __repr__(self) -> str:
        return f"<your candidate {self.number} in its process>"


class RemoteLock:
    """One of the student's lock objects, in the host."""

    def __init__(self, host: LockHost, number: str, name: str) -> None:
        self.host, self.number, self.name = host, number, name

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return bool(self.host.call("acquire", lock=self.number, blocking=bool(blocking),
                                   timeout=timeout))

    def release(self) -> None:
        self.host.call("release", lock=self.number)

    def ensure_held(self) -> None:
        self.host.call("ensure_held", lock=self.number)

    def _get(self, attribute: str):
        return self.host.call("get", lock=self.number, attribute=attribute)

    @property
    def fencing_token(self) -> int | None:
        value = self._get("fencing_token")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def token(self) -> str | None:
        value = self._get("token")
        return None if value is None else str(value)

    @property
    def held(self) -> bool:
        return bool(self._get("held"))

    def __repr__(self) -> str:
        return f"<your lock {self.name!r} in its process>"
