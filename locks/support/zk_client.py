"""The kazoo client our ZooKeeper locks share, and the errors that mean it
cannot reach ZooKeeper.

It is kazoo, with the same threads, timeouts, watches and reconnection, made
cheaper per request in four places. A lock's hand-over is a few requests
and a wake-up, so on a busy machine their CPU is what limits how many
sections a second the locks pass (``lockshop bench zookeeper``):

1. **Waiting on the socket with ``poll``.** kazoo's threading handler builds
   a fresh epoll object for every ``select`` (create, register, wait, close:
   four system calls and a handful of Python objects), so that it has no
   limit on file descriptor numbers. ``poll`` has no such limit either and
   is one system call (``PollingHandler``).
2. **Sending from the thread that makes the request.** kazoo puts every
   request on a queue, wakes its connection thread through a socket pair,
   and that thread sends it: three system calls and a thread switch before
   a byte leaves. While the connection is up and nothing is queued ahead,
   ``DirectConnection`` sends it at once, from the caller's thread, under
   the lock the connection thread also takes to send: requests still leave
   in the order they were made, each with the next xid, and the connection
   thread still reads the answers, matches them and hands them back.
3. **Reading and writing first, waiting only when the socket is not ready.**
   kazoo waits with ``select`` before every ``recv`` and ``send``, two or
   three waits per request, though the answer's body is nearly always there
   with its length.
4. **Callbacks that only signal run where the event is read.** A watch or an
   answer's callback marked ``run_inline`` (a waiter's ``Wakeup``, which only
   sets an event; a release's check of its delete, which only logs) runs on
   the connection thread instead of through kazoo's callback thread: one
   thread switch less on every hand-over.

One ``exists`` after another, on the 2-core machine this was written on (CPU
per request, the median of three runs of 4,000): kazoo 261 µs, with 1 alone
167 µs, with all four 118 µs.

These lean on kazoo's private parts, so ``pyproject.toml`` holds kazoo to
the versions they were written for, ``tests/test_zk_client.py`` checks
each of them, and kazoo's own lock tests run on this client unchanged
(``scripts/kazoo-lock-tests``): every request kazoo's client accepts goes
through, its testing markers too.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import AsyncResult, KazooTimeoutError, SequentialThreadingHandler
from kazoo.protocol.connection import (
    _CONNECTION_DROP,
    _SESSION_EXPIRED,
    ConnectionDropped,
    ConnectionHandler,
)
from kazoo.protocol.serialization import Auth
from kazoo.protocol.states import KeeperState, WatchedEvent

READABLE = select.POLLIN | select.POLLPRI
#: A closed, reset or invalid descriptor: reported as ready, as ``select`` does,
#: so that kazoo's next ``recv`` or ``send`` raises the error it already handles.
BROKEN = select.POLLERR | select.POLLHUP | select.POLLNVAL
#: The errors that mean "ZooKeeper cannot be reached (now)".
UNREACHABLE = (ConnectionLoss, SessionExpiredError, ConnectionClosedError,
               OperationTimeoutError, KazooTimeoutError)


class PollingHandler(SequentialThreadingHandler):
    """kazoo's threading handler, waiting with ``poll`` instead of a new epoll per wait."""

    def select(self, rlist, wlist, xlist, timeout=None):
        poller = select.poll()
        wanted: dict[int, int] = {}
        for objects, mask in ((rlist, READABLE), (wlist, select.POLLOUT)):
            for obj in objects:
                fd = _fd(obj)
                if fd < 0:
                    raise TypeError(f"Invalid file descriptor: {fd}")  # as kazoo's own select
                wanted[fd] = wanted.get(fd, 0) | mask
        for fd, mask in wanted.items():
            poller.register(fd, mask)
        ready = dict(poller.poll(None if timeout is None else timeout * 1000))
        readable = [obj for obj in rlist if ready.get(_fd(obj), 0) & (READABLE | BROKEN)]
        writable = [obj for obj in wlist if ready.get(_fd(obj), 0) & (select.POLLOUT | BROKEN)]
        return readable, writable, []

    def async_result(self):
        return InlineCallbacksResult(self)

    def dispatch_callback(self, callback):
        """Run a watch marked ``run_inline`` on the connection thread, as it is read.

        kazoo queues every watch for its callback thread, so that a slow one
        cannot hold up the connection. A lock's wake-up only sets an event:
        run there, it saves the waiter a thread hop on every hand-off.
        """
        if getattr(callback.func, "run_inline", False):
            callback.func(*callback.args)
            return
        super().dispatch_callback(callback)


class InlineCallbacksResult(AsyncResult):
    """kazoo's ``AsyncResult``, calling a callback marked ``run_inline`` (``rawlink``)
    on the thread that sets the result (or links the callback, when the result is
    already in), never through kazoo's callback thread."""

    def _do_callbacks(self):
        inline = [c for c in self._callbacks if getattr(c, "run_inline", False)]
        self._callbacks = [c for c in self._callbacks if c not in inline]
        for callback in inline:
            callback(self)
        super()._do_callbacks()


def run_inline(callback):
    """Mark ``callback`` (a watch, or a request's ``rawlink``) to run on the thread
    that reads its event or answer: it must only record or signal, never wait."""
    callback.run_inline = True
    return callback


def _fd(obj) -> int:
    return obj if isinstance(obj, int) else obj.fileno()


class DirectConnection(ConnectionHandler):
    """kazoo's connection, sending each request from the thread that makes it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        #: Held by whoever writes a request: the caller here, the connection thread
        #: (queued requests, pings). The xid and the pending list go with the write.
        self._sending = threading.Lock()
        #: Up, and ours to write on: set once the session is established, cleared
        #: (under ``_sending``) before kazoo fails what is pending on a lost connection.
        self.open = False
        self._write_timeout = 10.0

    def send_now(self, request, async_object) -> bool:
        """Send ``request`` on this thread; False when it must take kazoo's queue
        (not connected, or requests queued before it that must go first)."""
        client = self.client
        with self._sending:
            if not self.open or client._queue or client._stopped.is_set():
                return False
            self._xid = (self._xid % 2147483647) + 1
            # Pending before it is written: the answer may be read before we return.
            client._pending.append((request, async_object, self._xid))
            try:
                self._submit(request, self._write_timeout, self._xid)
            except Exception:
                # A half-written request leaves the stream unreadable: break the
                # connection. The connection thread reconnects and fails everything
                # pending (this request too) with ConnectionLoss, as kazoo does.
                self.open = False
                self._break()
            return True

    def close_for_sending(self) -> None:
        with self._sending:
            self.open = False

    def _break(self) -> None:
        try:
            self._socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _connect(self, host, hostip, port):
        read_timeout, connect_timeout = super()._connect(host, hostip, port)
        with self._sending:
            self._write_timeout = connect_timeout / 1000.0
            self.open = True
        return read_timeout, connect_timeout

    def _send_request(self, read_timeout, connect_timeout):
        with self._sending:
            return super()._send_request(read_timeout, connect_timeout)

    def _send_ping(self, connect_timeout):
        with self._sending:
            return super()._send_ping(connect_timeout)

    def _read(self, length, timeout):
        """Read ``length`` bytes, waiting only when none are there yet."""
        if isinstance(self._socket, ssl.SSLSocket):
            return super()._read(length, timeout)
        parts = []
        with self._socket_error_handling():
            while length > 0:
                try:
                    chunk = self._socket.recv(length)
                except BlockingIOError:
                    self._wait_until(readable=True, timeout=timeout)
                    continue
                if not chunk:
                    raise ConnectionDropped("socket connection broken")
                parts.append(chunk)
                length -= len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _write(self, msg, timeout):
        """Write ``msg``, waiting only when the socket's buffer is full."""
        if isinstance(self._socket, ssl.SSLSocket):
            return super()._write(msg, timeout)
        left = memoryview(msg)
        with self._socket_error_handling():
            while left:
                try:
                    sent = self._socket.send(left)
                except BlockingIOError:
                    self._wait_until(readable=False, timeout=timeout)
                    continue
                if not sent:
                    raise ConnectionDropped("socket connection broken")
                left = left[sent:]

    def _wait_until(self, *, readable: bool, timeout: float) -> None:
        ready = self.handler.select([self._socket] if readable else [],
                                    [] if readable else [self._socket], [], timeout)
        if not ready[0 if readable else 1]:
            raise self.handler.timeout_exception(
                "socket time-out during " + ("read" if readable else "write"))


class LeanClient(KazooClient):
    """A ``KazooClient`` whose requests go out through ``DirectConnection``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        kazoos = self._connection
        self._connection = DirectConnection(self, kazoos.retry_sleeper, logger=self.logger,
                                            sasl_options=kazoos.sasl_options)

    def _call(self, request, async_object):
        if _sent_directly(request) and self._connection.send_now(request, async_object):
            return None  # as kazoo's own, for a request it has taken
        return super()._call(request, async_object)

    def _session_callback(self, state):
        if state not in (KeeperState.CONNECTED, KeeperState.CONNECTED_RO):
            # Before kazoo fails what is pending: nothing may join it after that.
            self._connection.close_for_sending()
        super()._session_callback(state)


def _sent_directly(request) -> bool:
    """Whether ``request`` may leave from the caller's thread. Not kazoo's testing markers
    (its tests end a session or drop a connection by queueing them: its connection thread
    raises the fault as it takes them from the queue), and not an authentication, which
    kazoo sends with an xid of its own."""
    if request is _SESSION_EXPIRED or request is _CONNECTION_DROP:
        return False
    return request.type != Auth.type


def new_client(hosts: str, *, timeout: float, **options) -> KazooClient:
    """Our client on the polling handler; ``options`` go to kazoo as they are."""
    return LeanClient(hosts=hosts, timeout=timeout, handler=PollingHandler(), **options)

class Wakeup:
    """A watch that wakes the one thread waiting on it, and says what happened.

    Pass it as a kazoo ``watch``; ``wait(seconds)`` then sleeps until it fires
    and answers the event's type (``EventType.DELETED``, ``CHANGED``, ...), or
    None when ``seconds`` passed first. kazoo fires every watch with
    ``EventType.NONE`` when the session goes.
    """

    #: Two steps, no I/O: kazoo's connection thread may run it as it reads the
    #: event, a thread hop sooner than its callback thread would.
    run_inline = True

    def __init__(self) -> None:
        self._fired = threading.Event()
        self._event: WatchedEvent | None = None

    def __call__(self, event: WatchedEvent) -> None:
        self._event = event
        self._fired.set()

    def wait(self, seconds: float) -> str | None:
        if not self._fired.wait(seconds):
            return None
        return self._event.type
