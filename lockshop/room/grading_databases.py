"""The room's MariaDB: one private server, started with the first grading that needs it,
and for each such grading a database and a user of its own, dropped when it ends.

A grading runs hostile code, so each guard below stands between it and something:

- the server listens on no port, and the sandbox is shown its socket's folder alone;
- root logs in by ``unix_socket`` only, so from uid 0 only: not from the sandbox's
  ``nobody``;
- a grading's user may do everything in its own database and nothing anywhere else
  (``GRANT``), with a random password, and at most ``MAX_USER_CONNECTIONS`` connections,
  so that one grading cannot take the server's from the others;
- when the grading ends its user goes first (no new logins), then whatever it still has
  connected is killed, then its database is dropped;
- the server takes a share of the machine, not the machine: no statement of a grading's
  runs longer than ``STATEMENT_SECONDS``; a grading whose database outgrows
  ``QUOTA_BYTES`` is shut out at once (its user dropped, its connections killed); the
  server runs in cgroups of ``CPU_CORES`` and ``MEMORY_BYTES``, and its files live in a
  tmpfs of ``DISK_BYTES``, so that what the quota does not see (a temporary table, undo)
  fills that tmpfs and never the machine's disk. A full disk breaks the server in one
  of two ways, both seen: InnoDB stops it ("Out of disk space in rollback"), or it lives
  on refusing every write, the DROP DATABASE that would free the room among them
  ("The table is full"). Either way the next grading starts a fresh one: at once for a
  stopped server, once the gradings still on it have ended for a server that could not
  drop a grading's database.
  Hostile queries slow the gradings on this server, not the shop, the room or the other
  gradings' sandboxes.

The machine's own MariaDB (127.0.0.1:3306, root with no password) stays unreachable: the
sandbox's network namespace has nothing but its own loopback.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from lockshop.cluster.mariadb_servers import MariaDBServer
from lockshop.exercises.databases import lock_wait_view
from lockshop.room import cgroups

LOGGER = logging.getLogger(__name__)

#: The exercises' backends graded on the room's MariaDB.
BACKENDS = ("mysql",)
#: Where a grading finds the server's socket, inside the sandbox.
INSIDE_SOCKET_FOLDER = "/run/mariadb"
#: The most connections one grading may hold at once: the grader's buyers and the sale's
#: three shop instances peak at about 25 (the reference, measured).
MAX_USER_CONNECTIONS = 60
#: What a grading's user may do: everything, in its own database alone.
GRANT = "ALL PRIVILEGES ON `{database}`.*"
#: The server's share of the machine. Its files (data, logs, temporary tables) take about
#: 45 MB; the rest is room for sixteen gradings' tables. tmpfs pages are charged to the
#: memory of the process that writes them, so its memory cap holds the disk's too.
DISK_BYTES = 1024 * 1024 * 1024
MEMORY_BYTES = DISK_BYTES + 512 * 1024 * 1024
CPU_CORES = 1.0
#: The most a grading's database may take on disk (the reference's takes under 1 MB), and
#: how often it is measured: at the fastest InnoDB writes here (about 300 MB/s) a grading
#: gets 30 MB past it, so three gradings at once stay far inside ``DISK_BYTES``.
QUOTA_BYTES = 128 * 1024 * 1024
QUOTA_EVERY_S = 0.1
#: MariaDB's ``max_statement_time`` for a grading's user: the sale's longest statement
#: waits for a row lock behind a few 400 ms business delays.
STATEMENT_SECONDS = 20


@dataclass(frozen=True)
class Account:
    """One grading's database, and the user that alone may use it."""

    database: str
    password: str
    #: The server's socket's folder, on this machine: bound into the grading's sandbox.
    socket_folder: Path

    @property
    def url(self) -> str:
        """Its URL as the grading sees it, inside the sandbox."""
        return (f"mysql://{self.database}:{quote(self.password, safe='')}@localhost/"
                f"{self.database}?unix_socket={INSIDE_SOCKET_FOLDER}/mysqld.sock")


class GradingDatabases:
    """The room's server, kept in ``folder`` (made afresh when it starts), and its
    gradings' accounts."""

    def __init__(self, folder: Path, *, disk_bytes: int = DISK_BYTES,
                 memory_bytes: int = MEMORY_BYTES, cpu_cores: float = CPU_CORES,
                 statement_seconds: float = STATEMENT_SECONDS,
                 quota_bytes: int | None = QUOTA_BYTES) -> None:
        self.folder = folder
        self.disk_bytes, self.memory_bytes, self.cpu_cores = disk_bytes, memory_bytes, cpu_cores
        self.statement_seconds, self.quota_bytes = statement_seconds, quota_bytes
        self._server: MariaDBServer | None = None
        self._cgroups: cgroups.ServerGroup | None = None
        self._starting = threading.Lock()
        #: Gradings with an account on the server now, and whether the server must be made
        #: afresh once they have ended (it could not drop a grading's database).
        self._in_use = 0
        self._spoiled = False
        self._idle = threading.Condition(self._starting)

    def server(self) -> MariaDBServer:
        """The server, started on the first call (``StartError`` if it cannot start). It
        is told to stop when the thread that started it ends (``spawn``'s parent-death
        signal): in the room, a queue's worker, which lives as long as the room."""
        with self._starting:
            return self._current()

    def _current(self) -> MariaDBServer:
        if self._server is not None and self._server.process.poll() is not None:
            LOGGER.error("the room's MariaDB stopped (%s): starting a fresh one",
                         _last_error(self._server.log_path))
            self._remove()
        if self._spoiled:
            # Its data may be what filled its disk: wait for the gradings on it to end
            # (theirs would fail with it), then start again from nothing.
            self._idle.wait_for(lambda: self._in_use == 0)
            if self._spoiled:
                LOGGER.error("the room's MariaDB could not drop a grading's database: "
                             "starting a fresh one")
                self._remove()
        if self._server is None:
            self._remove()  # a killed room's leftovers
            self._mount()
            server = MariaDBServer(self.folder)
            try:
                server.start()
                self._confine(server)
            except BaseException:
                server.remove()
                self._unmount()
                raise
            self._server = server
        return self._server

    def _mount(self) -> None:
        """A tmpfs of ``disk_bytes`` for the server's files (root only; else a warning)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o",
                               f"size={self.disk_bytes},mode=0700", "tmpfs", str(self.folder)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            LOGGER.warning("the room's MariaDB: no tmpfs of its own (%s): its disk is not "
                           "capped", done.stderr.strip())

    def _unmount(self) -> None:
        if os.path.ismount(self.folder):
            subprocess.run(["umount", "--lazy", str(self.folder)], capture_output=True)

    def _confine(self, server: MariaDBServer) -> None:
        try:
            self._cgroups = cgroups.server_group(server.process.pid, cpu_cores=self.cpu_cores,
                                                 memory_bytes=self.memory_bytes)
        except OSError as error:
            LOGGER.warning("the room's MariaDB: cgroups are not writable here (%s): its "
                           "CPU and memory are not capped", error)

    @contextmanager
    def account(self) -> Iterator[Account]:
        """A database and a user for one grading; both dropped on the way out."""
        with self._starting:
            server = self._current()
            self._in_use += 1
        try:
            with self._account_on(server) as account:
                yield account
        finally:
            with self._starting:
                self._in_use -= 1
                self._idle.notify_all()

    @contextmanager
    def _account_on(self, server: MariaDBServer) -> Iterator[Account]:
        account = Account(f"grading_{secrets.token_hex(6)}", secrets.token_urlsafe(24),
                          server.socket_folder)
        name, user = account.database, f"'{account.database}'@'localhost'"
        with closing(server.admin()) as admin, admin.cursor() as sql:
            sql.execute(f"CREATE DATABASE `{name}`")
            sql.execute(f"CREATE USER {user} IDENTIFIED BY %s "
                        f"WITH MAX_USER_CONNECTIONS {MAX_USER_CONNECTIONS} "
                        f"MAX_STATEMENT_TIME {self.statement_seconds:g}", (account.password,))
            sql.execute(f"GRANT {GRANT.format(database=name)} TO {user}")
            sql.execute(lock_wait_view(name))
        ended = threading.Event()
        quota = threading.Thread(target=self._keep_to_quota, args=(server, name, ended),
                                 name=f"quota-{name}", daemon=True)
        if self.quota_bytes is not None:
            quota.start()
        try:
            yield account
        finally:
            ended.set()
            if quota.is_alive():
                quota.join()
            self._drop(server, account)

    def _keep_to_quota(self, server: MariaDBServer, name: str, ended: threading.Event) -> None:
        """Measure the grading's database on disk until it ends; past the quota, shut the
        grading out (its statements fail, so its checks do)."""
        folder = server.folder / "data" / name
        while not ended.wait(QUOTA_EVERY_S):
            if _bytes_on_disk(folder) > self.quota_bytes:
                LOGGER.warning("grading database %s is over its quota of %s bytes: shut out",
                               name, self.quota_bytes)
                _shut_out(server, name)
                return

    def _drop(self, server: MariaDBServer, account: Account) -> None:
        name = account.database
        try:
            _shut_out(server, name)
            with closing(server.admin()) as admin, admin.cursor() as sql:
                sql.execute(f"DROP DATABASE IF EXISTS `{name}`")
        except Exception:  # noqa: BLE001 - the verdict stands; the server is made afresh
            LOGGER.exception("could not drop the grading database %s", name)
            with self._starting:
                if self._server is server:
                    self._spoiled = True

    def close(self) -> None:
        """Stop the server and delete its data (a later grading starts it again)."""
        with self._starting:
            self._remove()

    def _remove(self) -> None:
        """Stop the server if there is one, and take away everything it had."""
        if self._server is not None:
            self._server.remove()
            self._server = None
        self._spoiled = False
        if self._cgroups is not None:
            self._cgroups.remove()
            self._cgroups = None
        self._unmount()
        shutil.rmtree(self.folder, ignore_errors=True)


def _shut_out(server: MariaDBServer, name: str) -> None:
    """Drop the grading's user (no new logins), then kill what it still has connected: a
    connection left waiting for a row lock would hold the database's metadata lock, and
    a DROP DATABASE would wait for it."""
    with closing(server.admin()) as admin, admin.cursor() as sql:
        sql.execute(f"DROP USER IF EXISTS '{name}'@'localhost'")
        sql.execute("SELECT id FROM information_schema.processlist WHERE user = %s", (name,))
        for (connection,) in sql.fetchall():
            try:
                sql.execute(f"KILL CONNECTION {int(connection)}")
            except Exception:  # noqa: BLE001 - it ended meanwhile
                pass


def _bytes_on_disk(folder: Path) -> int:
    """What the files in ``folder`` take (allocated, not their length: InnoDB preallocates)."""
    total = 0
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
                except OSError:
                    continue  # dropped meanwhile
    except OSError:
        return 0
    return total


def _last_error(log: Path) -> str:
    """The server's last error line (a crash ends in pages of stack and limits)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    errors = [line for line in lines if "[ERROR]" in line]
    return (errors or lines or ["an empty log"])[-1].strip()
