"""One command to N Redis servers at once: Redlock's requests.

``fan_out(clients, *command)`` is the plain form, through redis-py's clients (the
Redlock exercise's). ``Servers`` is Redlock's own, with less work per server. What
it guarantees:

* **one round trip in all**: the command is written to every server before
  any answer is read, so N servers cost the slowest one's round trip, not
  the sum of N;
* **nothing sent twice**: the command is packed once (``_packed``), and the same
  bytes go to every server; a script travels by its hash (``EVALSHA``), its body only
  to a server that answers that it does not know it (a new or restarted
  server), and then to that server alone;
* **nothing waited for that need not be**: each server's command goes on a
  connection of its own (past redis-py's pool, its retries and its metrics, as
  ``redis_support.DirectScripts`` does for one server), never after another
  server's answer, and one ``poll`` checks all the idle connections at once;
* **no more work per answer than its one line**: every answer Redlock asks for is one
  line (``+OK``, ``$-1``, ``:1``, an error), read off the socket (``_one_line_answer``);
* a server that cannot be reached, or answers with an error, gives
  ``UNREACHABLE``, and its connection is dropped if an answer may be left
  half read on it. It never raises: the caller counts the answers.
"""

from __future__ import annotations

import functools
import hashlib
import os
import select
import threading

import redis

#: What ``poll`` says of an idle connection that must not be used: data (a stray
#: byte, or the end of the stream when the server closed it) or an error.
READY = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP


class _Unreachable:
    def __repr__(self) -> str:
        return "UNREACHABLE"


#: What a server that did not answer (or answered with an error) gives.
UNREACHABLE = _Unreachable()


def fan_out(clients: list[redis.Redis], *command) -> list:
    """Send ``command`` to every server, then read every reply: one round trip in all.

    A server that cannot be reached (or answers with an error) gives ``UNREACHABLE``.
    """
    sent = []
    for client in clients:
        pool = client.connection_pool
        connection = None
        try:
            connection = pool.get_connection()
            connection.send_command(*command)
            sent.append((pool, connection))
        except redis.RedisError:
            sent.append((pool, None))
            if connection is not None:
                connection.disconnect()
                pool.release(connection)
    answers = []
    for pool, connection in sent:
        if connection is None:
            answers.append(UNREACHABLE)
            continue
        try:
            answers.append(connection.read_response())
        except redis.RedisError:
            answers.append(UNREACHABLE)  # read_response has dropped the connection
        finally:
            pool.release(connection)
    return answers


def _unless_error(answer):
    return UNREACHABLE if isinstance(answer, redis.RedisError) else answer


class Servers:
    """The N servers of one Redlock factory, each with idle connections of its own."""

    def __init__(self, clients: list[redis.Redis]) -> None:
        self.clients = clients
        self._idle: list[list[redis.Connection]] = [[] for _ in clients]
        self._guard = threading.Lock()
        self._pid = os.getpid()

    def __len__(self) -> int:
        return len(self.clients)

    def ask_all(self, *command) -> list:
        """Every server's answer to ``command``, in the servers' order."""
        servers = range(len(self.clients))
        return [_unless_error(answer) for answer in self._ask(servers, command)]

    def run_everywhere(self, source: str, keys: tuple, args: tuple) -> list:
        """Every server's answer to the Lua script ``source``, sent by its hash."""
        command = ("EVALSHA", _sha1(source), len(keys), *keys, *args)
        answers = self._ask(range(len(self.clients)), command)
        for n, answer in enumerate(answers):
            if isinstance(answer, redis.exceptions.NoScriptError):
                answers[n] = self._load_and_run(n, source, command)
        return [_unless_error(answer) for answer in answers]

    def close(self) -> None:
        with self._guard:
            idle, self._idle = self._idle, [[] for _ in self.clients]
        for connection in (c for server in idle for c in server):
            connection.disconnect()

    def _load_and_run(self, n: int, source: str, command: tuple):
        try:
            self.clients[n].script_load(source)
        except redis.RedisError:
            return UNREACHABLE
        return self._ask([n], command)[0]

    def _ask(self, servers, command: tuple) -> list:
        """Write ``command`` to each of ``servers``, then read each answer (an error
        answer as its exception, a server that failed as ``UNREACHABLE``)."""
        servers = list(servers)
        connections = self._take(servers)
        packed = [_packed(command)]
        for n, connection in enumerate(connections):
            try:
                connection.send_packed_command(packed, check_health=False)
            except (redis.RedisError, OSError):
                connection.disconnect()
                connections[n] = None
        answers = []
        for server, connection in zip(servers, connections):
            if connection is None:
                answers.append(UNREACHABLE)
                continue
            try:
                answers.append(_one_line_answer(connection))
            except (redis.RedisError, OSError):  # maybe half an answer unread: drop the link
                connection.disconnect()
                answers.append(UNREACHABLE)
                continue
            with self._guard:
                self._idle[server].append(connection)
        return answers

    def _take(self, servers: list[int]) -> list[redis.Connection]:
        """An idle connection to each server (a new one connects as it sends). One the
        server closed while it was idle (a restart) reads as ready: one ``poll`` over
        all of them finds it, where redis-py's ``can_read`` costs three system calls
        a connection."""
        if self._pid != os.getpid():  # a forked child: its parent's sockets are not its own
            self._idle, self._pid = [[] for _ in self.clients], os.getpid()
        with self._guard:
            idle = [self._idle[n].pop() if self._idle[n] else None for n in servers]
        taken = [connection or _new_connection(self.clients[n])
                 for n, connection in zip(servers, idle)]
        poller, by_fd = select.poll(), {}
        for connection in taken:
            if connection._sock is not None:
                by_fd[connection._sock.fileno()] = connection
                poller.register(connection._sock, READY)
        for fd, _event in poller.poll(0) if by_fd else ():
            by_fd[fd].disconnect()  # the next send opens it afresh
        return taken


def _new_connection(client: redis.Redis) -> redis.Connection:
    pool = client.connection_pool
    return pool.connection_class(**pool.connection_kwargs)


def _one_line_answer(connection: redis.Connection):
    """The server's answer to one of Redlock's commands, read off the socket: each is one
    line (``+OK``, ``$-1``, ``:1``, or an error), where redis-py's reader, made for any
    answer, took 38% of a Redlock pair's CPU. An error answer is returned as redis-py's
    exception; an answer of any other shape drops the connection (``UNREACHABLE``)."""
    sock = connection._sock
    line = sock.recv(4096)
    while not line.endswith(b"\r\n"):
        more = sock.recv(4096)
        if not more:
            raise redis.ConnectionError("the server closed the connection")
        line += more
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest
    if kind == b":":
        return int(rest)
    if line in (b"$-1\r\n", b"_\r\n"):
        return None
    if kind == b"-":
        return connection._parser.parse_error(rest.decode("utf-8", "replace"))
    raise redis.ConnectionError(f"an answer Redlock never asks for: {line[:40]!r}")


def _packed(command: tuple) -> bytes:
    """``command`` as the Redis protocol writes it: an array of bulk strings (redis-py's
    ``pack_command`` does the same for any argument, in 2.7 times the time)."""
    parts = [b"*%d\r\n" % len(command)]
    for argument in command:
        if not isinstance(argument, bytes):
            argument = str(argument).encode()  # a name, a token, a number of milliseconds
        parts.append(b"$%d\r\n%s\r\n" % (len(argument), argument))
    return b"".join(parts)


@functools.lru_cache(maxsize=64)
def _sha1(source: str) -> str:
    return hashlib.sha1(source.encode()).hexdigest()
