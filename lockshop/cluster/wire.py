"""A Redis client that lets the grader step in between a lock's commands.

The grader needs nothing from a student's code to find a race: it watches
the commands the lock sends on this client, and acts right after the first
one of a kind that touches the lock's key. Stop the process after the first
write (a crash between ``SETNX`` and ``EXPIRE``), or pause after the first
read (another client's turn between ``GET`` and ``DEL``). One Lua script is
one command, so a lock that does its check and its write in one script
leaves no moment to step into: exactly the articles' point.

A ``WATCH``/``MULTI`` release runs on a pipeline of the same client: its
commands before ``MULTI`` (``WATCH``, ``GET``) are watched as the client's own,
and the transaction is written down as it is sent (``MULTI``, its commands,
``EXEC``). ``sent`` counts every command the client sent, on any key: what a
waiter costs the server while it waits.
"""

from __future__ import annotations

import select
import threading
from collections.abc import Callable

import redis

#: Commands that write a key (the ones a lock's steps use, and their cousins).
WRITES = frozenset({
    "SET", "SETNX", "SETEX", "PSETEX", "GETSET", "MSET", "INCR", "INCRBY", "DECR",
    "HSET", "HSETNX", "HMSET", "HINCRBY", "HDEL", "DEL", "UNLINK", "EXPIRE", "PEXPIRE",
    "EXPIREAT", "PEXPIREAT", "PERSIST", "LPUSH", "RPUSH", "LPOP", "RPOP",
})
#: Commands that only read a key.
READS = frozenset({
    "GET", "EXISTS", "TYPE", "TTL", "PTTL", "HGET", "HEXISTS", "HGETALL", "HLEN", "HKEYS",
    "HVALS", "MGET", "STRLEN", "LRANGE", "LINDEX",
})
#: Commands that wait in the server until something arrives: a waiter that is told.
BLOCKING = frozenset({
    "BLPOP", "BRPOP", "BLMOVE", "BRPOPLPUSH", "BLMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP",
    "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "WAIT",
})
#: Lua: the script runs inside the server, all at once.
SCRIPTS = frozenset({"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL"})


def keys_of(name: str, args: tuple) -> tuple:
    """The keys a command names (the first argument; a script's KEYS)."""
    if name in SCRIPTS and len(args) >= 3:  # EVALSHA sha numkeys key... arg...
        count = int(args[2])
        return tuple(args[3:3 + count])
    return tuple(args[1:2])


class WatchedRedis(redis.Redis):
    """``redis.Redis`` that calls ``after(kind, command)`` once a command on ``key`` has
    been answered, where kind is "write", "read" or "script"."""

    def __init__(self, *args, key: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.watched_key = key.encode()
        self.after: Callable[[str, str], None] | None = None
        self.commands: list[str] = []
        #: Every command answered, on any key (a transaction: MULTI, its commands, EXEC).
        self.sent = 0
        #: Of those, the ones that wait in the server (``BLOCKING``).
        self.blocking = 0
        #: Of those, the ones that ended with something to take (a wake-up), not at their
        #: timeout.
        self.woken = 0
        #: Called just before a command that waits in the server is sent.
        self.before_blocking: Callable[[], None] | None = None
        #: A command sent on this client is waiting in the server now.
        self.in_blocking_wait = False
        self._guard = threading.Lock()

    @classmethod
    def watching(cls, url: str, key: str, **options) -> WatchedRedis:
        """A client of the server at ``url`` that watches the commands on ``key``."""
        client = cls(connection_pool=redis.ConnectionPool.from_url(url, **options), key=key)
        client.auto_close_connection_pool = True  # its pool is its own: close() closes it
        return client

    def execute_command(self, *args, **options):
        blocking = str(args[0]).upper() in BLOCKING
        if blocking and self.before_blocking is not None:
            self.before_blocking()
        self.in_blocking_wait = blocking
        try:
            answer = super().execute_command(*args, **options)
        finally:
            self.in_blocking_wait = False
        if blocking and answer is not None:
            with self._guard:
                self.woken += 1
        self.saw(args)
        return answer

    def pipeline(self, transaction=True, shard_hint=None) -> WatchedPipeline:
        return WatchedPipeline(self, transaction, shard_hint)

    def saw(self, args: tuple, *, step_in: bool = True) -> None:
        """A command was answered: count it, and step in if it named the watched key."""
        name = str(args[0]).upper()
        with self._guard:
            self.sent += 1
            self.blocking += name in BLOCKING
        if any(_as_bytes(key) == self.watched_key for key in keys_of(name, args)):
            kind = "script" if name in SCRIPTS else "write" if name in WRITES else \
                "read" if name in READS else "other"
            with self._guard:
                self.commands.append(name)
            if step_in and self.after is not None:
                self.after(kind, name)


class WatchedPipeline(redis.client.Pipeline):
    """A pipeline of a ``WatchedRedis``: the commands it runs at once (after ``WATCH``)
    are watched like the client's; a transaction is written down, MULTI to EXEC, once
    it has been answered (refused or not), without stepping in."""

    def __init__(self, client: WatchedRedis, transaction, shard_hint) -> None:
        super().__init__(client.connection_pool, client.response_callbacks, transaction,
                         shard_hint)
        self.client = client

    def immediate_execute_command(self, *args, **options):
        answer = super().immediate_execute_command(*args, **options)
        self.client.saw(args)
        return answer

    def execute(self, raise_on_error: bool = True):
        queued = [args for args, _options in self.command_stack]
        try:
            return super().execute(raise_on_error)
        finally:
            if queued:
                transaction = self.transaction or self.explicit_transaction
                # MULTI and EXEC are said as the key's when the transaction names it.
                key = [self.client.watched_key] if any(
                    _as_bytes(k) == self.client.watched_key
                    for args in queued for k in keys_of(str(args[0]).upper(), args)) else []
                for args in ([("MULTI", *key)] if transaction else []) + queued \
                        + ([("EXEC", *key)] if transaction else []):
                    self.client.saw(args, step_in=False)


def _as_bytes(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


# --- the same watch, from outside the lock's process: a proxy on the wire --------------------

#: Commands a client sends on connecting, before the lock's first: not the lock's to count.
HANDSHAKE = frozenset({"HELLO", "AUTH", "CLIENT", "SELECT", "READONLY"})
#: Commands no lock needs, refused by the proxy without reaching the server: what would
#: show or change the server's settings (its password among them), stop it, make it
#: another's replica, or read every other client's traffic.
REFUSED = frozenset({
    "CONFIG", "ACL", "AUTH", "SHUTDOWN", "DEBUG", "MONITOR", "SLAVEOF", "REPLICAOF",
    "MODULE", "MIGRATE", "FAILOVER", "SYNC", "PSYNC", "CLUSTER", "BGSAVE", "SAVE",
    "BGREWRITEAOF", "LATENCY", "MEMORY",
})
#: CLIENT's subcommands a connection may use on itself; the others (KILL, PAUSE, LIST...)
#: reach other clients.
CLIENT_OWN = frozenset({"SETINFO", "SETNAME", "GETNAME", "ID", "INFO", "NO-EVICT",
                        "NO-TOUCH", "REPLY"})
#: Commands after which a connection speaks push messages, not one answer per command: the
#: proxy passes the rest through unread.
PUSHED = frozenset({"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "MONITOR"})


class Incomplete(Exception):
    """The buffer ends before the message does."""


def read_resp(buffer: bytes | bytearray, at: int = 0) -> tuple[object, int]:
    """One RESP message (2 or 3) from ``buffer`` at ``at``: (its value, where it ends).
    Bulk strings are bytes, simple strings and errors ``str``; ``None`` for a null.
    ``Incomplete`` when more bytes are needed; ``ValueError`` for what is not RESP."""
    end = buffer.find(b"\r\n", at)
    if end < 0:
        raise Incomplete
    kind, line = buffer[at:at + 1], bytes(buffer[at + 1:end])
    after = end + 2
    if kind in (b"+", b"-", b"("):
        return line.decode("utf-8", "replace"), after
    if kind in (b":", b","):
        return line.decode("ascii", "replace"), after
    if kind == b"_":
        return None, after
    if kind == b"#":
        return line == b"t", after
    if kind in (b"$", b"!", b"="):
        size = int(line)
        if size < 0:
            return None, after
        if len(buffer) < after + size + 2:
            raise Incomplete
        return bytes(buffer[after:after + size]), after + size + 2
    if kind in (b"*", b"~", b">", b"%", b"|"):
        count = int(line)
        if count < 0:
            return None, after
        items = []
        for _item in range(count * (2 if kind in (b"%", b"|") else 1)):
            item, after = read_resp(buffer, after)
            items.append(item)
        if kind == b"|":  # attributes come before the answer they describe
            return read_resp(buffer, after)
        return items, after
    if not kind:
        raise Incomplete
    # An inline command (``PING\r\n``), as telnet or a raw probe sends it.
    return [word.encode() for word in line.decode("utf-8", "replace").split()] \
        if kind.isalpha() else _not_resp(kind), after


def _not_resp(kind: bytes):
    raise ValueError(f"not RESP: {kind!r}")


#: How many of a proxy's threads wait for a client at once, each signed in already: a lock
#: that opens several connections at once (a pool of six threads' clients) is not served
#: one sign-in after another, which a loaded machine once made longer than a lock
#: client's two-second timeout.
READY_CONNECTIONS = 4


class RedisProxy:
    """A TCP proxy between a lock's process and a Redis server that watches the lock's
    commands as ``WatchedRedis`` does, from outside that process: the same counters
    (``sent``, ``blocking``, ``woken``, ``in_blocking_wait``), the same list of commands on
    the watched key (``commands``) and the same hooks. ``after(kind, command)`` runs once
    the server has answered a command on the key, before the answer is passed on: the
    lock's thread waits there for as long as the hook does, while the server has already
    done the command. ``before_blocking()`` runs before a blocking command is passed on.

    Each connection gets one of its own to the server, read command by command and answer
    by answer, so one paused connection holds up nobody else's. A transaction's commands
    (MULTI to EXEC) are counted, and written down once it is answered, without stepping
    in, as ``WatchedPipeline`` does. Nothing the lock's process says is believed but the
    bytes it sends the server: what is counted is what went over the wire.

    With ``password``, the proxy signs in to the server on each of its connections, so
    that the lock's process, which never learns the password, reaches the server only
    through a proxy; ``REFUSED`` commands (``CONFIG GET requirepass`` among them) are
    answered with an error and never sent.
    """

    def __init__(self, upstream: tuple[str, int], *, key: str | None = None,
                 host: str = "127.0.0.1", password: str | None = None) -> None:
        import socket
        self.upstream = upstream
        self.password = password
        self.watched_key = key.encode() if key is not None else None
        self.after: Callable[[str, str], None] | None = None
        self.before_blocking: Callable[[], None] | None = None
        self.commands: list[str] = []
        self.client_name: str | None = None
        self.sent = 0
        self.blocking = 0
        self.woken = 0
        self._waiting = 0
        self._guard = threading.Lock()
        self._closed = threading.Event()
        self._connections: list = []
        self._listener = socket.create_server((host, 0))
        self.address = self._listener.getsockname()[:2]
        for _ready in range(READY_CONNECTIONS):
            threading.Thread(target=self._serve, daemon=True, name="redis-proxy").start()

    @property
    def url(self) -> str:
        return f"redis://{self.address[0]}:{self.address[1]}/0"

    def watch(self, key: str | None, client_name: str | None = None) -> RedisProxy:
        """Watch ``key`` from now on: its list of commands starts empty, and no hook is
        set (the counters go on: a check counts from where they are). With
        ``client_name``, ``commands`` lists only what the connections of that name (``CLIENT
        SETNAME``) sent: one client's, for saying what it sent. The counters and the hooks
        count and step in on every connection, whatever its name: a lock cannot go round
        them by sending from another one."""
        with self._guard:
            self.watched_key = key.encode() if key is not None else None
            self.client_name = client_name
            self.commands = []
        self.after = None
        self.before_blocking = None
        return self

    @property
    def in_blocking_wait(self) -> bool:
        """A blocking command passed on is waiting in the server now."""
        return self._waiting > 0

    def close(self) -> None:
        """Stop accepting, and cut every connection both ways. Shut down first: on Linux
        a close alone wakes neither the thread blocked in ``accept`` nor those blocked in
        ``recv``, and the proxy would go on serving the student's lock after its grading."""
        with self._guard:  # a connection being made now either is listed here or sees closed
            self._closed.set()
            sockets = [self._listener, *self._connections]
        shut_down(*sockets)
        for sock in sockets:
            try:
                sock.close()
            except OSError:
                pass

    def __enter__(self) -> RedisProxy:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _serve(self) -> None:
        """One client's connection, from its accept to its end, on this thread; the next
        client's is another's: ``READY_CONNECTIONS`` threads wait in accept at once, and
        each that gets a client starts one to take its place. Each thread
        connects and signs in to the server before it accepts (for as long as the server
        takes: a paused one, SIGSTOP, answers once resumed, and a client meanwhile waits
        as it would at the server itself), so that a new client's first command waits for
        no sign-in of its own: a lock whose per-server timeout is 0.1 s (Redlock's) must
        not spend it on the hop. A connection the server has ended since (a kill, a
        restart) is made afresh; a server that is down cuts the client at once."""
        server = self._signed_in()
        try:
            client, _address = self._listener.accept()
        except OSError:  # closed
            if server is not None:
                server.close()
            return
        threading.Thread(target=self._serve, daemon=True, name="redis-proxy").start()
        with self._guard:
            closed = self._closed.is_set()
            self._connections.append(client)
        if server is not None and _ended(server):
            server.close()
            server = None
        if server is None and not closed:
            server = self._signed_in()
        if server is None or closed:
            shut_down(client, *([server] if server is not None else []))
            client.close()
            return
        pending: list = []  # (name, args, in a transaction) per command passed on
        state = {"multi": None, "raw": False, "lock": threading.Lock(),
                 "drained": threading.Condition(), "name": None}
        threading.Thread(target=self._answers, args=(server, client, pending, state),
                         daemon=True, name="redis-proxy-answers").start()
        self._commands(client, server, pending, state)

    def _signed_in(self):
        """A new connection to the server, signed in, or None if it cannot be had."""
        import socket
        try:
            server = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            return None
        with self._guard:
            closed = self._closed.is_set()
            self._connections.append(server)  # close() cuts it, even mid sign-in
        try:
            if closed:
                raise OSError("the proxy is closed")
            server.settimeout(None)
            if self.password:
                secret = self.password.encode()
                server.sendall(b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n" % (len(secret), secret))
                if not _line(server).startswith(b"+OK"):
                    raise OSError("the server refused the proxy's password")
        except OSError:
            shut_down(server)
            server.close()
            return None
        return server

    def _commands(self, client, server, pending: list, state: dict) -> None:
        buffer = bytearray()
        try:
            while chunk := client.recv(65536):
                if state["raw"]:
                    server.sendall(chunk)
                    continue
                buffer += chunk
                while buffer:
                    try:
                        command, end = read_resp(buffer)
                    except Incomplete:
                        break
                    raw, buffer = bytes(buffer[:end]), buffer[end:]
                    args = command if isinstance(command, list) and command else [b"?"]
                    name = _as_bytes(args[0]).decode("utf-8", "replace").upper()
                    if refused(name, args):
                        self._refuse(client, name, pending, state)
                        continue
                    if name == "CLIENT" and len(args) > 2 and \
                            _as_bytes(args[1]).upper() == b"SETNAME":
                        state["name"] = _as_bytes(args[2]).decode("utf-8", "replace")
                    if name in BLOCKING and self.before_blocking is not None:
                        self.before_blocking()
                    with state["lock"]:
                        in_multi = state["multi"] is not None and name not in ("EXEC", "DISCARD")
                        if name == "MULTI":
                            state["multi"] = []
                        elif in_multi:
                            state["multi"].append(args)
                        pending.append((name, args, in_multi))
                    if name in BLOCKING and not in_multi:
                        with self._guard:
                            self._waiting += 1
                    if name in PUSHED:
                        state["raw"] = True
                        server.sendall(raw + bytes(buffer))
                        buffer.clear()
                        break
                    server.sendall(raw)
        except (OSError, ValueError):
            pass
        finally:
            shut_down(client, server)

    def _answers(self, server, client, pending: list, state: dict) -> None:
        buffer = bytearray()
        try:
            while chunk := server.recv(65536):
                if state["raw"] and not pending:
                    client.sendall(chunk)
                    continue
                buffer += chunk
                while buffer and pending:
                    try:
                        answer, end = read_resp(buffer)
                    except Incomplete:
                        break
                    raw, buffer = bytes(buffer[:end]), buffer[end:]
                    with state["lock"]:
                        name, args, in_multi = pending.pop(0)
                        finished = None
                        if name in ("EXEC", "DISCARD") and state["multi"] is not None:
                            finished, state["multi"] = state["multi"], None
                    self._answered(name, args, answer, in_multi, finished, state["name"])
                    client.sendall(raw)
                    if not pending:
                        with state["drained"]:
                            state["drained"].notify_all()
                if state["raw"] and not pending and buffer:
                    client.sendall(bytes(buffer))
                    buffer.clear()
        except (OSError, ValueError):
            pass
        finally:
            shut_down(client, server)

    @staticmethod
    def _refuse(client, name: str, pending: list, state: dict) -> None:
        """Answer a refused command with an error, in its turn: once every command sent
        before it has had its answer. Those still unanswered after 30 s (a blocking wait
        with no timeout ahead of it) and the connection is cut instead: an answer out of
        its turn would be read by the client as another command's."""
        with state["drained"]:
            drained = state["drained"].wait_for(lambda: not pending, timeout=30)
        if not drained:
            shut_down(client)
            return
        client.sendall(f"-ERR {name} is not allowed here (the grader's proxy)\r\n"
                       .encode())

    def _answered(self, name: str, args: list, answer, in_multi: bool,
                  transaction: list | None, client_name: str | None = None) -> None:
        if name in HANDSHAKE:
            return
        blocking = name in BLOCKING and not in_multi
        with self._guard:
            self.sent += 1
            self.blocking += blocking
            if blocking:
                self._waiting = max(0, self._waiting - 1)
                self.woken += answer is not None and not isinstance(answer, str)
        if in_multi:
            return
        if transaction is not None:  # EXEC or DISCARD: the transaction, written down
            names = [_as_bytes(a[0]).decode("utf-8", "replace").upper() for a in transaction]
            if any(self._names_key(n, a) for n, a in zip(names, transaction)):
                with self._guard:
                    if self._listed(client_name):
                        self.commands += ["MULTI", *names, name]
            return
        if name == "MULTI" or not self._names_key(name, args):
            return
        kind = "script" if name in SCRIPTS else "write" if name in WRITES else \
            "read" if name in READS else "other"
        with self._guard:
            if self._listed(client_name):
                self.commands.append(name)
        if self.after is not None:
            self.after(kind, name)

    def _listed(self, client_name: str | None) -> bool:
        return self.client_name is None or client_name == self.client_name

    def _names_key(self, name: str, args: list) -> bool:
        if self.watched_key is None:
            return False
        try:
            keys = keys_of(name, tuple(args))
        except (ValueError, TypeError):
            return False
        return any(_as_bytes(key) == self.watched_key for key in keys)


def refused(name: str, args: list) -> bool:
    """Whether the proxy refuses this command (``REFUSED``, and CLIENT's subcommands on
    other clients)."""
    if name in REFUSED:
        return True
    if name == "CLIENT":
        sub = _as_bytes(args[1]).decode("utf-8", "replace").upper() if len(args) > 1 else ""
        return sub not in CLIENT_OWN
    return False


def _line(sock) -> bytes:
    """One line from ``sock``, up to its CRLF (the server's answer to the sign-in)."""
    line = b""
    while not line.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise OSError("the server closed the connection")
        line += chunk
    return line


def _ended(sock) -> bool:
    """Whether the server has ended ``sock`` (or sent on it unasked) since it was made."""
    ready = select.poll()
    ready.register(sock, select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(ready.poll(0))


def shut_down(*sockets) -> None:
    """Shut ``sockets`` down both ways: on Linux a close alone wakes no thread blocked in
    ``accept`` or ``recv`` on them."""
    import socket
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
