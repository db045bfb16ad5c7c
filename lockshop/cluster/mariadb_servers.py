"""A MariaDB server of our own: a fresh data folder, no network, a unix socket only.

From Debian's ``mariadb-server`` package (its ``mariadb-install-db`` and ``mariadbd``).
The room starts one to grade the exercises that need MariaDB, where the machine's
own server (127.0.0.1:3306, root with no password) must stay out of reach of the
students' code. What makes it safe to hand a sandbox its socket:

- ``skip-networking``: it listens on no port, only on a socket in a folder of its own
  (the one folder a grading is shown);
- root is ``unix_socket`` only: the kernel says who is at the other end of the socket,
  and only uid 0 is root; a sandbox's ``nobody`` cannot log in as it;
- no anonymous user and no ``test`` database.

Tuned to be small and quick, not durable (its data is thrown away with the room): an
8 MB redo log and a 10 MB system tablespace growing 8 MB at a time instead of 96 MB,
12 MB and 64 MB, a 32 MB buffer pool, no doublewrite, no flush per commit, no
performance schema. Measured on two cores: made and started in 0.6 to 0.7 s, 36 MB on
disk (44 MB after gradings of exercise 18), 88 MB of memory (about 105 MB after them).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from lockshop.cluster.processes import ServerProcess, StartError, last_line, spawn
from shop.i18n import _

#: The longest path a unix socket may have (``sun_path``, 108 bytes with its NUL).
MAX_SOCKET_PATH = 107
#: The most connections the server takes, all gradings together: sixteen at their cap
#: (``room.grading_databases.MAX_USER_CONNECTIONS``), more than a room grades at once.
MAX_CONNECTIONS = 1000


def mariadb_installed() -> bool:
    return shutil.which("mariadbd") is not None and shutil.which("mariadb-install-db") is not None


class MariaDBServer(ServerProcess):
    """One ``mariadbd`` in ``folder``: ``data/``, ``socket/mysqld.sock``, ``mariadb.log``.
    Run by root (as root: ``--user=root``), which alone may use its root account."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.process: subprocess.Popen | None = None
        self.stop_grace = 10.0

    @property
    def socket_folder(self) -> Path:
        """The folder of the socket alone: what a sandbox is shown."""
        return self.folder / "socket"

    @property
    def socket(self) -> Path:
        return self.socket_folder / "mysqld.sock"

    @property
    def log_path(self) -> Path:
        return self.folder / "mariadb.log"

    def config(self) -> str:
        return "\n".join([
            "[mariadbd]", f"datadir={self.folder / 'data'}", f"socket={self.socket}",
            f"pid-file={self.folder / 'mariadbd.pid'}", f"log-error={self.log_path}",
            # Its temporary tables in a folder of its own: a server starting removes every
            # ``#sql*`` file in its tmpdir as a crash's leftovers, and in a shared /tmp it
            # removed the live ones of another server (seen: "Can't find file
            # '/tmp/#sql-temptable-...'", and a crash in mariadb-install-db).
            f"tmpdir={self.folder / 'tmp'}",
            "user=root", "skip-networking", "skip-name-resolve",
            f"max-connections={MAX_CONNECTIONS}",
            "innodb-log-file-size=8M", "innodb-data-file-path=ibdata1:10M:autoextend",
            "innodb-autoextend-increment=8", "innodb-buffer-pool-size=32M",
            "innodb-doublewrite=0",
            "innodb-flush-log-at-trx-commit=0", "performance-schema=0", ""])

    def start(self) -> MariaDBServer:
        if not mariadb_installed():
            raise StartError(_("MariaDB is not installed (Debian: apt-get install "
                               "mariadb-server)"))
        if len(os.fsencode(self.socket)) > MAX_SOCKET_PATH:
            raise StartError(_("the path of MariaDB's socket is too long for a socket "
                               "(%(path)s): move the runtime folder higher up",
                               path=self.socket))
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.chmod(0o700)
        (self.folder / "tmp").mkdir(exist_ok=True)
        self.socket_folder.mkdir(mode=0o755, exist_ok=True)
        self.socket_folder.chmod(0o755)  # nobody must reach the socket, and see nothing else
        defaults = self.folder / "my.cnf"
        defaults.write_text(self.config())
        if not (self.folder / "data" / "mysql").is_dir():
            self._install(defaults)
        self.process = spawn(["mariadbd", f"--defaults-file={defaults}"],
                             env=dict(os.environ), log_path=self.folder / "mariadbd.out")
        self._wait_until_ready()
        return self

    def remove(self) -> None:
        """Stop, and delete the data."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def admin(self):
        """A connection as root (through the socket: only uid 0 gets one), autocommit."""
        import pymysql  # the mysql extra: only needed where a server of ours runs

        connection = pymysql.connect(unix_socket=str(self.socket), user="root",
                                     autocommit=True, connect_timeout=2, defer_connect=True)
        # The socket is ours to close when the server is not there (a stopped server):
        # pymysql leaves the one it makes open when its connect fails.
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(2)
            sock.connect(str(self.socket))
        except OSError as error:
            sock.close()
            raise pymysql.err.OperationalError(
                2002, f"Can't connect to MariaDB through {self.socket} ({error})") from None
        connection.connect(sock)  # on a failure from here on, pymysql closes it
        return connection

    def _install(self, defaults: Path) -> None:
        done = subprocess.run(
            ["mariadb-install-db", f"--defaults-file={defaults}", "--skip-test-db",
             "--auth-root-authentication-method=socket"], capture_output=True, text=True)
        if done.returncode != 0:
            # Its own output ends in a page of advice; the server's reason is in the log.
            raise StartError(_("mariadb-install-db failed: %(said)s",
                               said=last_line(self.log_path)))

    def _wait_until_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise StartError(_("mariadbd exited with %(code)s: %(said)s (log: %(log)s)",
                                   code=self.process.returncode,
                                   said=last_line(self.log_path), log=self.log_path))
            # The socket is made once the server is ready for connections (asking before
            # would leave pymysql's half-made sockets behind).
            if self.socket.exists():
                self.admin().close()
                return
            time.sleep(0.05)
        raise StartError(_("mariadbd not ready after %(seconds)s s (log: %(log)s)",
                           seconds=f"{timeout:g}", log=self.log_path))
