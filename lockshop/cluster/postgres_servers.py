"""PostgreSQL servers of our own: a fresh cluster (``initdb``) on a free port.

The machine's own PostgreSQL listens on its loopback, which no host of a
``Network`` can reach; a server of our own runs on a host of the LAN, so an
instance can be cut off from its database while the others still reach it,
and the database can be stopped and started as a fault. From Debian's
``postgresql`` package (its ``initdb`` and ``postgres``), trust
authentication, nothing tuned but what a throwaway server needs: no fsync
(its data is thrown away with the run), and enough connections for three
instances' pools.

PostgreSQL refuses to run as root: as root, the server runs as the
``postgres`` user the package creates, in a folder of its own.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from lockshop.cluster.network import LOOPBACK, Host
from lockshop.cluster.processes import (
    ServerProcess,
    StartError,
    free_port,
    last_line,
    spawn,
)
from shop.i18n import _

#: Where Debian's package puts the server's programs: /usr/lib/postgresql/<major>/bin.
_DEBIAN_BINARIES = Path("/usr/lib/postgresql")
USER = "postgres"


def postgres_binaries() -> Path | None:
    """The folder of the newest installed ``initdb`` and ``postgres``, or None."""
    found = sorted(_DEBIAN_BINARIES.glob("*/bin/postgres"),
                   key=lambda path: int(path.parts[-3]) if path.parts[-3].isdigit() else 0)
    if found:
        return found[-1].parent
    on_path = shutil.which("postgres")
    return Path(on_path).parent if on_path else None


def postgres_unavailable() -> str | None:
    """Why a server of our own cannot start here, or None when it can."""
    if postgres_binaries() is None:
        return _("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(USER)
        except KeyError:
            return _("no %(user)r user to run PostgreSQL as (it refuses to run as root)",
                     user=USER)
    return None


class PostgresServer(ServerProcess):
    """One PostgreSQL server on its host's address; ``admin_url`` reaches its ``postgres``
    database as the ``postgres`` superuser, with no password."""

    def __init__(self, name: str = "postgres", *, port: int | None = None,
                 host: Host = LOOPBACK) -> None:
        self.name = name
        self.host = host
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None
        self.stop_grace = 10.0
        # Not in the run's folder: that one is root's alone (mkdtemp makes it 0700),
        # and the server runs as ``postgres``.
        self.folder = Path(tempfile.mkdtemp(prefix=f"lockshop-{name}-"))
        self._initialised = False

    @property
    def admin_url(self) -> str:
        return f"postgresql://{USER}@{self.host.address}:{self.port}/postgres"

    @property
    def log_path(self) -> Path:
        return self.folder / "postgres.log"

    def start(self) -> PostgresServer:
        problem = postgres_unavailable()
        if problem:
            raise StartError(problem)
        if not self._initialised:
            self._initdb()
        binaries = postgres_binaries()
        self.process = spawn(self.host.command(self._as_owner(
            [str(binaries / "postgres"), "-D", str(self.folder / "data"),
             "-p", str(self.port), "-c", f"listen_addresses={self.host.address}",
             "-c", "unix_socket_directories=", "-c", "max_connections=300",
             "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off"])),
            env=dict(os.environ), log_path=self.log_path)
        self._wait_until_ready()
        return self

    def restart(self) -> PostgresServer:
        self.stop()
        return self.start()

    def stop(self) -> None:
        """A fast shutdown (SIGINT): SIGTERM would wait for every client to leave, and
        the instances' pools never do."""
        if self.process is not None and self.process.poll() is None:
            self.resume()
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(self.stop_grace)
            except subprocess.TimeoutExpired:
                pass
        super().stop()

    def remove(self) -> None:
        """Stop, and delete the data: after this the server cannot start again."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        try:
            return self.start()
        except BaseException:
            self.remove()
            raise

    def __exit__(self, *exc_info) -> None:
        self.remove()

    def _initdb(self) -> None:
        if os.geteuid() == 0:
            account = pwd.getpwnam(USER)
            os.chown(self.folder, account.pw_uid, account.pw_gid)
        done = subprocess.run(self._as_owner(
            [str(postgres_binaries() / "initdb"), "-D", str(self.folder / "data"),
             "-U", USER, "--auth=trust", "--no-sync", "--encoding=UTF8", "--no-locale"]),
            capture_output=True, text=True)
        if done.returncode != 0:
            raise StartError(_("initdb failed: %(said)s",
                                 said=(done.stderr or done.stdout).strip()[-300:]))
        # Its own subnet only: the LAN's hosts and the machine (the bridge's address).
        with (self.folder / "data" / "pg_hba.conf").open("a") as rules:
            rules.write("host all all 0.0.0.0/0 trust\n")
        self._initialised = True

    @staticmethod
    def _as_owner(argv: list[str]) -> list[str]:
        """``argv`` run as ``postgres`` when we are root (setpriv execs: no extra process
        between the server and the signals we send it)."""
        if os.geteuid() != 0:
            return argv
        return ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups", *argv]

    def _wait_until_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise StartError(_("postgres on port %(port)s exited with %(code)s: %(said)s "
                                   "(log: %(log)s)", port=self.port,
                                   code=self.process.returncode,
                                   said=last_line(self.log_path), log=self.log_path))
            if self._answers():
                return
            time.sleep(0.1)
        raise StartError(_("postgres on port %(port)s not ready after %(seconds)s s "
                           "(log: %(log)s)", port=self.port, seconds=f"{timeout:g}",
                           log=self.log_path))

    def _answers(self) -> bool:
        """Whether it takes a session: a server still starting up accepts the
        connection and then refuses it."""
        import psycopg  # the postgres extra: only needed where a server of ours runs

        try:
            with psycopg.connect(self.admin_url, connect_timeout=1):
                return True
        except psycopg.OperationalError:
            return False
