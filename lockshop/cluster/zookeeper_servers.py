"""ZooKeeper servers of our own: standalone, or a small ensemble, on free ports.

From Debian's ``zookeeper`` package (its jar, run with the machine's Java),
with data in a runtime folder. The launcher, the demo and the tests start
them when no ZooKeeper address is configured, so that every run has servers
it may kill and pause without touching anyone else's.

Settings (``zoo.cfg``), chosen for a laptop and written down for the
benchmarks: ``tickTime=500`` (so sessions may be as short as one second,
``minSessionTimeout=1000``), ``forceSync=yes`` (ZooKeeper's default: every
write is fsynced before it is acknowledged), 4 MB log pre-allocation instead
of 64 MB, the admin HTTP server off, and the four-letter commands on (we use
``ruok`` and ``srvr`` to see whether a server is up, and which one leads).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
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

JAR = Path("/usr/share/java/zookeeper.jar")
#: Logs to stderr (the server's log file) instead of nowhere.
LOGGER_JAR = Path("/usr/share/java/slf4j-simple.jar")
TICK_MS = 500


def zookeeper_installed() -> bool:
    return JAR.exists() and shutil.which("java") is not None


class ZooKeeperServer(ServerProcess):
    """One ZooKeeper server process; a member of an ensemble when ``peers`` is given."""

    def __init__(self, runtime_dir: Path, name: str = "zookeeper", *,
                 myid: int = 1, peers: dict[int, tuple[int, int]] | None = None,
                 port: int | None = None, host: Host = LOOPBACK) -> None:
        self.folder = runtime_dir / name
        self.host = host
        self.name = name
        self.myid = myid
        #: myid -> (quorum port, election port), for every member; empty when standalone.
        self.peers = peers or {}
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None
        self.stop_grace = 10.0

    @property
    def address(self) -> str:
        return f"{self.host.address}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.folder / "zookeeper.log"

    def config(self) -> str:
        lines = [f"tickTime={TICK_MS}", "initLimit=10", "syncLimit=5",
                 f"dataDir={self.folder / 'data'}", f"clientPort={self.port}",
                 f"clientPortAddress={self.host.address}", "minSessionTimeout=1000",
                 "maxSessionTimeout=60000", "forceSync=yes", "preAllocSize=4096",
                 "admin.enableServer=false",
                 # wchp and dump: the exercises' grader counts watches per node and the
                 # ephemeral nodes of each session (cheap on a workshop's few nodes).
                 "4lw.commands.whitelist=ruok,srvr,stat,mntr,wchp,dump",
                 "maxClientCnxns=0"]
        lines += [f"server.{n}=127.0.0.1:{quorum}:{election}"
                  for n, (quorum, election) in sorted(self.peers.items())]
        return "\n".join(lines) + "\n"

    def launch(self) -> ZooKeeperServer:
        """Start the process without waiting for it (an ensemble starts its members together)."""
        if not zookeeper_installed():
            raise StartError(_("ZooKeeper is not installed (Debian: apt-get install zookeeper)"))
        (self.folder / "data").mkdir(parents=True, exist_ok=True)
        (self.folder / "data" / "myid").write_text(f"{self.myid}\n")
        (self.folder / "zoo.cfg").write_text(self.config())
        classpath = f"{JAR}:{LOGGER_JAR}" if LOGGER_JAR.exists() else str(JAR)
        self.process = spawn(self.host.command(
            ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath,
             "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(self.folder / "zoo.cfg")]),
            env=dict(os.environ), log_path=self.log_path)
        return self

    def start(self) -> ZooKeeperServer:
        return self.launch().wait_until_serving()

    def wait_until_serving(self, timeout: float = 60.0) -> ZooKeeperServer:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise StartError(_("ZooKeeper %(name)s exited with %(code)s: %(said)s "
                                   "(log: %(log)s)", name=self.name,
                                   code=self.process.returncode,
                                   said=last_line(self.log_path), log=self.log_path))
            if self.mode() is not None:
                return self
            time.sleep(0.1)
        raise StartError(_("ZooKeeper %(name)s on port %(port)s is not serving after "
                           "%(seconds)s s (log: %(log)s)", name=self.name, port=self.port,
                           seconds=f"{timeout:g}", log=self.log_path))

    def mode(self) -> str | None:
        """"standalone", "leader" or "follower" while serving; None otherwise."""
        answer = four_letter_word(self.port, "srvr", self.host.address)
        for line in answer.splitlines():
            if line.startswith("Mode: "):
                return line.removeprefix("Mode: ").strip()
        return None


class ZooKeeperEnsemble:
    """``size`` servers that elect a leader among themselves (3 survive one loss)."""

    def __init__(self, runtime_dir: Path, size: int = 3, name: str = "zk") -> None:
        peers = {n: (free_port(), free_port()) for n in range(1, size + 1)}
        self.servers = [ZooKeeperServer(runtime_dir, f"{name}-{n}", myid=n, peers=peers)
                        for n in peers]

    @property
    def hosts(self) -> str:
        """The connection string a client wants: every member."""
        return ",".join(server.address for server in self.servers)

    def start(self) -> ZooKeeperEnsemble:
        for server in self.servers:
            server.launch()
        for server in self.servers:
            server.wait_until_serving()
        return self

    def leader(self) -> ZooKeeperServer:
        for server in self.servers:
            if server.process is not None and server.mode() == "leader":
                return server
        raise StartError(_("the ensemble has no leader"))

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def __enter__(self) -> ZooKeeperEnsemble:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc_info) -> None:
        self.stop()


def four_letter_word(port: int, word: str, address: str = "127.0.0.1") -> str:
    """A four-letter command's answer ("" when the server does not answer)."""
    try:
        with socket.create_connection((address, port), timeout=1) as connection:
            connection.sendall(word.encode())
            chunks = []
            while chunk := connection.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""
