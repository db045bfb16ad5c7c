"""A TCP proxy between a lock's process and a ZooKeeper server, which reads off the wire
what the grader needs to know of that process's session.

The grader gives each factory of a student's ZooKeeper lock (one kazoo client, so one
session at a time) a proxy of its own, and reads from the traffic, not from the lock's
process:

- ``session`` and ``password``: the session the server gave this client, from the
  server's answer to the connect request. With them the grader ends that session on
  the server (``zookeeper_sessions.end_session``), as it would its own client's.
- ``children_watched()``: the paths whose children this session watches now. The
  server's four-letter words list the nodes' watches (``wchp``) but not the children's,
  so they are read here: a ``getChildren`` (or a reconnect's ``setWatches``) asking for a
  watch that the server answered without an error sets one; the server's notification
  of a change to those children (or of the node's deletion) fires it, as it fires once.

Only the server's answers make a watch: the lock's process can ask, never say it has
one. Frames are ZooKeeper's own (a 4-byte length, then jute), passed on whole and
unchanged, each direction on a thread of its own.
"""

from __future__ import annotations

import socket
import struct
import threading

from lockshop.cluster.wire import shut_down

#: The request types that can set a watch on a node's children.
GET_CHILDREN, GET_CHILDREN2, SET_WATCHES, SET_WATCHES2 = 8, 12, 101, 105
#: A reply with this xid is a watch's notification.
NOTIFICATION_XID = -1
#: The events that fire a children's watch on their path.
NODE_DELETED, NODE_CHILDREN_CHANGED = 2, 4
#: The longest frame passed on (the server's own limit, jute.maxbuffer, is about 1 MB).
MAX_FRAME = 16 * 1024 * 1024


class ZooKeeperProxy:
    """One client's way to the server ``upstream`` (host, port): every connection the
    client makes to ``address`` gets one of its own to the server."""

    def __init__(self, upstream: tuple[str, int], *, host: str = "127.0.0.1") -> None:
        self.upstream = upstream
        #: The session the server last gave a connection through here, and its password.
        self.session: int | None = None
        self.password: bytes | None = None
        self._children: set[str] = set()
        self._guard = threading.Lock()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server((host, 0))
        bound = self._listener.getsockname()
        self.address = f"{bound[0]}:{bound[1]}"
        threading.Thread(target=self._serve, daemon=True, name="zookeeper-proxy").start()

    def children_watched(self) -> list[str]:
        """The paths whose children the current session watches, as the server answered."""
        with self._guard:
            return sorted(self._children)

    def close(self) -> None:
        """Stop accepting and cut every connection (shut down first, so that the threads
        blocked in ``accept`` and ``recv`` wake)."""
        with self._guard:
            self._closed.set()
            sockets = [self._listener, *self._sockets]
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def __enter__(self) -> ZooKeeperProxy:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # --- the connections ---------------------------------------------------------------

    def _serve(self) -> None:
        while True:
            try:
                client, _address = self._listener.accept()
            except OSError:  # closed
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
                server.settimeout(None)
            except OSError:  # the server is down: the client sees its connection fail
                client.close()
                continue
            with self._guard:
                if self._closed.is_set():
                    client.close()
                    server.close()
                    return
                self._sockets += [client, server]
            for sock in (client, server):  # small frames, each waited for: no Nagle
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pending: dict[int, list[str]] = {}  # xid -> the paths it asked to watch
            requests = threading.Thread(target=self._requests, args=(client, server, pending),
                                        daemon=True, name="zookeeper-proxy-requests")
            requests.start()
            threading.Thread(target=self._answers, args=(server, client, pending, requests),
                             daemon=True, name="zookeeper-proxy-answers").start()

    def _requests(self, client: socket.socket, server: socket.socket,
                  pending: dict[int, list[str]]) -> None:
        """The client's frames, passed on; those that ask for children's watches noted
        by their xid first (so the answer finds them)."""
        try:
            connect = _frame(client)  # the connect request has no header
            if connect is None:
                return
            server.sendall(connect)
            while (frame := _frame(client)) is not None:
                asked = _children_asked(frame[4:])
                if asked is not None:
                    with self._guard:
                        pending[asked[0]] = asked[1]
                server.sendall(frame)
        except (OSError, ValueError, struct.error):
            pass
        finally:
            shut_down(client, server)

    def _answers(self, server: socket.socket, client: socket.socket,
                 pending: dict[int, list[str]], requests: threading.Thread) -> None:
        """The server's frames, read before they are passed on: the session the connect
        answer gives, the watches the answers set and the notifications fire. The last
        of the connection's two threads: it closes both ends."""
        try:
            connect = _frame(server)
            if connect is None:
                return
            self._connected(connect[4:])
            client.sendall(connect)
            while (frame := _frame(server)) is not None:
                self._answered(frame[4:], pending)
                client.sendall(frame)
        except (OSError, ValueError, struct.error):
            pass
        finally:
            shut_down(client, server)
            requests.join()
            with self._guard:
                for sock in (client, server):
                    if sock in self._sockets:
                        self._sockets.remove(sock)
                    sock.close()

    def _connected(self, body: bytes) -> None:
        """ConnectResponse: protocol version, timeout, session id, password."""
        _version, _timeout, session, length = struct.unpack_from(">iiqi", body)
        password = body[20:20 + max(length, 0)]
        if session == 0:  # refused (an expired session's id): no session was given
            return
        with self._guard:
            if session != self.session:  # a new session holds none of the old one's watches
                self._children.clear()
            self.session, self.password = session, password

    def _answered(self, body: bytes, pending: dict[int, list[str]]) -> None:
        xid, _zxid, error = struct.unpack_from(">iqi", body)
        with self._guard:
            if xid == NOTIFICATION_XID:
                kind, _state = struct.unpack_from(">ii", body, 16)
                path, _end = _string(body, 24)
                if kind in (NODE_DELETED, NODE_CHILDREN_CHANGED):
                    self._children.discard(path)
                return
            paths = pending.pop(xid, None)
            if paths is not None and error == 0:
                self._children.update(paths)


def _children_asked(body: bytes) -> tuple[int, list[str]] | None:
    """A request that asks the server to watch children: its xid and those paths."""
    xid, kind = struct.unpack_from(">ii", body)
    if kind in (GET_CHILDREN, GET_CHILDREN2):
        path, at = _string(body, 8)
        return (xid, [path]) if body[at:at + 1] == b"\x01" else None
    if kind in (SET_WATCHES, SET_WATCHES2):  # relative zxid; data, exist, child watches...
        at = 16
        for _list in range(2):
            _paths, at = _strings(body, at)
        children, _at = _strings(body, at)
        return xid, children
    return None


def _string(body: bytes, at: int) -> tuple[str, int]:
    (length,) = struct.unpack_from(">i", body, at)
    at += 4
    if length < 0:
        return "", at
    if at + length > len(body):
        raise ValueError("a string runs past its frame")
    return body[at:at + length].decode("utf-8", "replace"), at + length


def _strings(body: bytes, at: int) -> tuple[list[str], int]:
    (count,) = struct.unpack_from(">i", body, at)
    at += 4
    found = []
    for _item in range(max(count, 0)):
        path, at = _string(body, at)
        found.append(path)
    return found, at


def _frame(sock: socket.socket) -> bytes | None:
    """One frame, its length prefix included; None at the end of the stream."""
    head = _exactly(sock, 4)
    if head is None:
        return None
    (length,) = struct.unpack(">i", head)
    if not 0 <= length <= MAX_FRAME:
        raise ValueError("not a ZooKeeper frame")
    body = _exactly(sock, length)
    if body is None:
        return None
    return head + body


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 65536))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)

