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
  connected is killed, then its database is dropped.

The machine's own MariaDB (127.0.0.1:3306, root with no password) stays unreachable: the
sandbox's network namespace has nothing but its own loopback.
"""

from __future__ import annotations

import logging
import secrets
import shutil
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from lockshop.cluster.mariadb_servers import MariaDBServer
from lockshop.exercises.databases import lock_wait_view

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

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._server: MariaDBServer | None = None
        self._starting = threading.Lock()

    def server(self) -> MariaDBServer:
        """The server, started on the first call (``StartError`` if it cannot start). It
        is told to stop when the thread that started it ends (``spawn``'s parent-death
        signal): in the room, a queue's worker, which lives as long as the room."""
        with self._starting:
            if self._server is None:
                shutil.rmtree(self.folder, ignore_errors=True)  # a killed room's leftovers
                server = MariaDBServer(self.folder)
                try:
                    server.start()
                except BaseException:
                    server.remove()
                    raise
                self._server = server
            return self._server

    @contextmanager
    def account(self) -> Iterator[Account]:
        """A database and a user for one grading; both dropped on the way out."""
        server = self.server()
        account = Account(f"grading_{secrets.token_hex(6)}", secrets.token_urlsafe(24),
                          server.socket_folder)
        name, user = account.database, f"'{account.database}'@'localhost'"
        with closing(server.admin()) as admin, admin.cursor() as sql:
            sql.execute(f"CREATE DATABASE `{name}`")
            sql.execute(f"CREATE USER {user} IDENTIFIED BY %s "
                        f"WITH MAX_USER_CONNECTIONS {MAX_USER_CONNECTIONS}", (account.password,))
            sql.execute(f"GRANT {GRANT.format(database=name)} TO {user}")
            sql.execute(lock_wait_view(name))
        try:
            yield account
        finally:
            self._drop(server, account)

    @staticmethod
    def _drop(server: MariaDBServer, account: Account) -> None:
        name = account.database
        try:
            with closing(server.admin()) as admin, admin.cursor() as sql:
                sql.execute(f"DROP USER IF EXISTS '{name}'@'localhost'")
                # A connection left waiting for a row lock would hold the database's
                # metadata lock, and the DROP DATABASE would wait for it.
                sql.execute("SELECT id FROM information_schema.processlist WHERE user = %s",
                            (name,))
                for (connection,) in sql.fetchall():
                    try:
                        sql.execute(f"KILL CONNECTION {int(connection)}")
                    except Exception:  # noqa: BLE001 - it ended meanwhile
                        pass
                sql.execute(f"DROP DATABASE IF EXISTS `{name}`")
        except Exception:  # noqa: BLE001 - the verdict stands; leftovers go with the room
            LOGGER.exception("could not drop the grading database %s", name)

    def close(self) -> None:
        """Stop the server and delete its data (a later grading starts it again)."""
        with self._starting:
            if self._server is not None:
                self._server.remove()
                self._server = None
