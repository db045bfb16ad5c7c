"""Redis servers of our own: started on free ports in a runtime folder.

The launcher, the demo and the tests start them when no Redis URL is
configured, so that every run has servers it may kill, pause and restart
(the failure modes are the lesson) without touching anyone else's Redis.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from pathlib import Path

from lockshop.cluster.network import LOOPBACK, Host
from lockshop.cluster.processes import ServerProcess, StartError, free_port, spawn
from shop.i18n import _


def redis_server_binary() -> str | None:
    return shutil.which("redis-server")


class RedisServer(ServerProcess):
    """One redis-server: no persistence, bound to its host's address (127.0.0.1 unless
    it runs on a host of a ``Network``); a replica of the server on ``replica_of`` (a
    port) when given."""

    def __init__(self, runtime_dir: Path, name: str = "redis", port: int | None = None, *,
                 replica_of: int | None = None, host: Host = LOOPBACK,
                 password: str | None = None) -> None:
        self.runtime_dir = runtime_dir
        self.name = name
        self.port = port or free_port()
        self.replica_of = replica_of
        self.host = host
        #: Asked of every client (``requirepass``), when given: kept in a file of the
        #: server's folder, never on its command line, which every user can read.
        self.password = password
        self.process = None

    @property
    def url(self) -> str:
        secret = f":{self.password}@" if self.password else ""
        return f"redis://{secret}{self.host.address}:{self.port}/0"

    def start(self) -> RedisServer:
        binary = redis_server_binary()
        if binary is None:
            raise StartError(_("redis-server is not installed (Debian: apt-get install "
                               "redis-server)"))
        folder = self.runtime_dir / self.name
        folder.mkdir(parents=True, exist_ok=True)
        replica = ["--replicaof", "127.0.0.1", str(self.replica_of)] if self.replica_of else []
        config = []
        if self.password:
            secret = folder / "secret.conf"
            secret.touch(mode=0o600)
            secret.write_text(f"requirepass {self.password}\n")
            config = [str(secret)]
        self.process = spawn(self.host.command(
            [binary, *config, "--port", str(self.port), "--bind", self.host.address,
             "--protected-mode", "no", "--save", "", "--appendonly", "no",
             "--dir", str(folder), *replica]),
            env=dict(os.environ), log_path=folder / "redis.log")
        self._wait_until_ready(folder / "redis.log")
        return self

    def restart(self) -> RedisServer:
        """Start again on the same port (empty: it keeps nothing on disk)."""
        self.stop()
        return self.start()

    def _answers(self, folder: Path) -> bool:
        """Whether ours answers on its port: not another server that took the port between
        free_port() and our bind, or while ours was down for a restart (ours would exit,
        unable to bind, and whoever used it would talk to a stranger's server)."""
        return _pong(self.port, self.host.address, self.password) and \
            _folder_of(self.port, self.host.address, self.password) == os.path.realpath(folder)

    def _wait_until_ready(self, log_path: Path, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise StartError(_("redis-server on port %(port)s exited with %(code)s "
                                   "(log: %(log)s)", port=self.port,
                                   code=self.process.returncode, log=log_path))
            if self._answers(log_path.parent):
                return
            time.sleep(0.05)
        raise StartError(_("redis-server on port %(port)s did not answer (log: %(log)s)",
                           port=self.port, log=log_path))


class RedisSentinel(ServerProcess):
    """A Sentinel (``redis-server --sentinel``) watching one master, called ``shop``: it
    promotes a replica when the master has been down for ``down_after_ms``."""

    host = LOOPBACK

    def __init__(self, runtime_dir: Path, master_port: int, *, name: str = "sentinel",
                 down_after_ms: int = 1000) -> None:
        self.runtime_dir = runtime_dir
        self.name = name
        self.master_port = master_port
        self.down_after_ms = down_after_ms
        self.port = free_port()
        self.process = None

    def start(self) -> RedisSentinel:
        binary = redis_server_binary()
        if binary is None:
            raise StartError(_("redis-server is not installed (Debian: apt-get install "
                               "redis-server)"))
        folder = self.runtime_dir / self.name
        folder.mkdir(parents=True, exist_ok=True)
        config = folder / "sentinel.conf"  # Sentinel rewrites it as it learns: it must be a file
        config.write_text(f"""port {self.port}
bind 127.0.0.1
dir {folder}
sentinel monitor shop 127.0.0.1 {self.master_port} 1
sentinel down-after-milliseconds shop {self.down_after_ms}
sentinel failover-timeout shop 5000
sentinel parallel-syncs shop 1
""")
        self.process = spawn([binary, str(config), "--sentinel"], env=dict(os.environ),
                             log_path=folder / "sentinel.log")
        self._wait_until_ready(folder / "sentinel.log")
        return self

    _wait_until_ready = RedisServer._wait_until_ready

    def _answers(self, folder: Path) -> bool:
        # A Sentinel has no CONFIG command: its PING will do (it is started once, never
        # restarted on its port).
        return _pong(self.port, self.host.address)


def _authenticated(connection: socket.socket, password: str | None) -> bool:
    """Send AUTH first when the server asks for a password: whether it was accepted."""
    if not password:
        return True
    secret = password.encode()
    connection.sendall(b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n" % (len(secret), secret))
    return connection.recv(16).startswith(b"+OK")


def _pong(port: int, address: str = "127.0.0.1", password: str | None = None) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5) as connection:
            if not _authenticated(connection, password):
                return False
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _folder_of(port: int, address: str, password: str | None = None) -> str | None:
    """The working folder (``CONFIG GET dir``) of the Redis server answering on ``port``."""
    try:
        with socket.create_connection((address, port), timeout=0.5) as connection:
            if not _authenticated(connection, password):
                return None
            connection.sendall(b"CONFIG GET dir\r\n")
            answer = b""
            while answer.count(b"\r\n") < 5:  # *2, $3, dir, $n, the folder
                chunk = connection.recv(4096)
                if not chunk:
                    return None
                answer += chunk
    except OSError:
        return None
    parts = answer.split(b"\r\n")
    return parts[4].decode("utf-8", "replace") if parts[0] == b"*2" else None
