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
  The server keeps a watch on the connection that set it, so the proxy keeps it there
  too (``watching()``: each open connection's session and watches), and forgets it when
  that connection ends.

A factory's client has one connection at a time, so its proxy (``one_client``) refuses a
second one while the first is open: a second session through it (a client the lock's
process opened beside its own) would otherwise take the place of the lock's session in
what the grader reads, to be ended or watched in its stead. The grader counts the
children's watches of every connection through any of its proxies, so a watch set
through another one (the proxy the student's other processes share) is seen all the
same, for the session that set it.

Only the server's answers make a watch: the lock's process can ask, never say it has
one. Frames are ZooKeeper's own (a 4-byte length, then jute), passed on whole and
unchanged, each direction on a thread of its own.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

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
    """A way to the server ``upstream`` (host, port): every connection made to ``address``
    gets one of its own to the server. ``one_client``: the way of one client, which
    never has two connections at once; one that comes while another is open is closed."""

    def __init__(self, upstream: tuple[str, int], *, host: str = "127.0.0.1",
                 one_client: bool = False) -> None:
        self.upstream = upstream
        self.one_client = one_client
        #: The session the server last gave a connection through here, and its password.
        self.session: int | None = None
        self.password: bytes | None = None
        self._links: list[_Link] = []
        self._guard = threading.Lock()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server((host, 0))
        bound = self._listener.getsockname()
        self.address = f"{bound[0]}:{bound[1]}"
        threading.Thread(target=self._serve, daemon=True, name="zookeeper-proxy").start()

    def children_watched(self) -> list[str]:
        """The paths whose children are watched on the open connections, as the server
        answered (a factory's: its session's)."""
        with self._guard:
            return sorted(set().union(*(link.children for link in self._links)))

    def watching(self) -> dict[int, set[str]]:
        """Each session with an open connection through here, and the paths whose
        children it watches on it."""
        found: dict[int, set[str]] = {}
        with self._guard:
            for link in self._links:
                if link.session is not None:
                    found.setdefault(link.session, set()).update(link.children)
        return found

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
            if self.one_client and not self._alone():
                client.close()
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
                server.settimeout(None)
            except OSError:  # the server is down: the client sees its connection fail
                client.close()
                continue
            link = _Link(client, server)
            with self._guard:
                if self._closed.is_set():
                    client.close()
                    server.close()
                    return
                self._links.append(link)
                self._sockets += [client, server]
            for sock in (client, server):  # small frames, each waited for: no Nagle
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            requests = threading.Thread(target=self._requests, args=(link,),
                                        daemon=True, name="zookeeper-proxy-requests")
            requests.start()
            threading.Thread(target=self._answers, args=(link, requests),
                             daemon=True, name="zookeeper-proxy-answers").start()

    def _alone(self, grace: float = 1.0) -> bool:
        """Whether no connection is open through here, waiting ``grace`` seconds for one
        to end: a client that lost its connection opens the next one as soon as it has
        closed the last, which the proxy's threads may not have seen end yet."""
        deadline = time.monotonic() + grace
        while True:
            with self._guard:
                if not self._links:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    def _requests(self, link: _Link) -> None:
        """The client's frames, passed on; those that ask for children's watches noted
        by their xid first (so the answer finds them)."""
        client, server, pending = link.client, link.server, link.pending
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

    def _answers(self, link: _Link, requests: threading.Thread) -> None:
        """The server's frames, read before they are passed on: the session the connect
        answer gives, the watches the answers set and the notifications fire. The last
        of the connection's two threads: it closes both ends, and the server forgets the
        connection's watches, as the proxy does."""
        client, server = link.client, link.server
        try:
            connect = _frame(server)
            if connect is None:
                return
            self._connected(link, connect[4:])
            client.sendall(connect)
            while (frame := _frame(server)) is not None:
                self._answered(link, frame[4:])
                client.sendall(frame)
        except (OSError, ValueError, struct.error):
            pass
        finally:
            shut_down(client, server)
            requests.join()
            with self._guard:
                if link in self._links:
                    self._links.remove(link)
                for sock in (client, server):
                    if sock in self._sockets:
                        self._sockets.remove(sock)
                    sock.close()

    def _connected(self, link: _Link, body: bytes) -> None:
        """ConnectResponse: protocol version, timeout, session id, password."""
        _version, _timeout, session, length = struct.unpack_from(">iiqi", body)
        password = body[20:20 + max(length, 0)]
        if session == 0:  # refused (an expired session's id): no session was given
            return
        with self._guard:
            link.session = session
            self.session, self.password = session, password

    def _answered(self, link: _Link, body: bytes) -> None:
        xid, _zxid, error = struct.unpack_from(">iqi", body)
        with self._guard:
            if xid == NOTIFICATION_XID:
                kind, _state = struct.unpack_from(">ii", body, 16)
                path, _end = _string(body, 24)
                if kind in (NODE_DELETED, NODE_CHILDREN_CHANGED):
                    link.children.discard(path)
                return
            paths = link.pending.pop(xid, None)
            if paths is not None and error == 0:
                link.children.update(paths)


class _Link:
    """One connection through the proxy: its two sockets, its session, the children's
    watches the server set on it, and the requests for them still unanswered (xid ->
    paths)."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client, self.server = client, server
        self.session: int | None = None
        self.children: set[str] = set()
        self.pending: dict[int, list[str]] = {}


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

