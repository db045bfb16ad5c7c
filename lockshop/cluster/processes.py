"""Child processes: free ports, start, wait until ready, stop cleanly.

Used for the shop instances and for the Redis and ZooKeeper servers (``ServerProcess``).
Every child runs in its own session so that Ctrl-C reaches the launcher
alone, which then stops the children in order; and every child asks the
kernel to SIGTERM it if the launcher dies without cleaning up.
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from shop.i18n import _

PR_SET_PDEATHSIG = 1


class StartError(RuntimeError):
    """A child process did not become ready."""


#: Where a server of ours listens when no port is given: below the kernel's
#: ephemeral ports. A port the kernel picks for ``bind(0)`` comes from the same range
#: as the local port of every outgoing connection, so between our check and the
#: server's own bind a client of any process could take it (a suite with four workers
#: opens thousands of connections a minute: redis-server once exited with "Address
#: already in use"). Below that range only another listener can.
LISTENING_PORTS = range(20000, 32768)

_ports = random.SystemRandom()
#: Ports this process handed out lately. A port is free until its server binds it,
#: so a caller that asks for several before starting anything (an ensemble asks for
#: nine) could otherwise be given one twice: ZooKeeper then exits with 14, its
#: election port taken by its own peer.
_handed_out: deque[int] = deque(maxlen=4096)


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago, outside the range the kernel gives outgoing
    connections (where that range leaves room; otherwise the kernel's pick)."""
    ephemeral_low = _ephemeral_ports().start
    candidates = range(LISTENING_PORTS.start, min(LISTENING_PORTS.stop, ephemeral_low))
    for _attempt in range(200 if len(candidates) > 1000 else 0):
        port = _ports.choice(candidates)
        if port not in _handed_out and port_is_free(port, host, reuse=False):
            _handed_out.append(port)
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _ephemeral_ports() -> range:
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        return range(32768, 61000)  # Linux's default
    return range(low, high + 1)


def port_is_free(port: int, host: str = "127.0.0.1", *, reuse: bool = True) -> bool:
    """Whether a listener could bind ``port`` now (``reuse``: as servers do, with
    SO_REUSEADDR, which a connection closing in TIME_WAIT does not stop)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        if reuse:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn(command: Sequence[str], *, env: dict[str, str], log_path: Path,
          cwd: Path | None = None) -> subprocess.Popen:
    """Start ``command`` with its output going to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        return subprocess.Popen(list(command), env=env, cwd=cwd, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=_die_with_parent)


def wait_for_http(url: str, process: subprocess.Popen, log_path: Path,
                  timeout: float = 30.0) -> None:
    """Return once ``url`` answers 200; ``StartError`` with the log's tail otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise StartError(_("%(url)s exited with %(code)s: %(said)s (log: %(log)s)", url=url,
                               code=process.returncode, said=last_line(log_path),
                               log=log_path))
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    raise StartError(_("%(url)s not ready after %(seconds)s s: %(said)s (log: %(log)s)",
                       url=url, seconds=f"{timeout:g}", said=last_line(log_path), log=log_path))


def stop(process: subprocess.Popen, grace: float = 10.0) -> int | None:
    """SIGTERM the child's process group, then SIGKILL whatever is left after ``grace``."""
    if process.poll() is None:
        signal_group(process, signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            signal_group(process, signal.SIGKILL)
            process.wait()
    return process.returncode


def signal_group(process: subprocess.Popen, sig: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def pause_group(process: subprocess.Popen, timeout: float = 5.0) -> None:
    """SIGSTOP the child's process group, and return only once every thread of every
    process in it has stopped.

    The signal is delivered to each thread when the kernel next schedules it: on a busy
    machine a JVM thread may still answer one request after ``kill()`` has returned, and
    a lab that pauses a server to force a race would then see no race at all."""
    signal_group(process, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while not _all_stopped(process.pid):
        if time.monotonic() > deadline:
            raise RuntimeError(f"process group {process.pid} did not stop within {timeout:g} s")
        time.sleep(0.001)


def _all_stopped(group: int) -> bool:
    """Whether every thread of every process in process group ``group`` is stopped."""
    for task_stat in Path("/proc").glob("[0-9]*/task/*/stat"):
        fields = _stat_fields(task_stat)
        # fields[0] is the state, fields[2] the process group; a thread that has exited
        # meanwhile (no file, or Z, X) has nothing left to run.
        if fields is None or fields[2] != str(group) or fields[0] in ("T", "t", "Z", "X"):
            continue
        return False
    return True


def _stat_fields(path: Path) -> list[str] | None:
    """The fields of a /proc stat file after the command's name (in parentheses, which
    may itself hold spaces and parentheses), or None when the task has gone."""
    try:
        return path.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def last_line(path: Path) -> str:
    """The last non-empty line of a log, usually the reason a server stopped."""
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return lines[-1].strip() if lines else "(empty log)"


def process_state(pid: int, exit_code: int | None = None) -> str:
    """Whether a process is "up", "paused" (SIGSTOP: the kernel says T) or "down"."""
    if exit_code is not None:
        return "down"
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "down"
    # The state is the first field after the command's name, which is in parentheses.
    return "paused" if stat.rsplit(")", 1)[1].split()[0] in ("T", "t") else "up"


class ServerProcess:
    """A server process we started and may stop, kill (a crash), pause and resume.

    Subclasses set ``self.process`` in ``start()`` (with ``spawn``, so that it
    leads a process group of its own) and return ``self``. Every signal goes to
    the whole group: a crash or a pause takes the server's workers with it, as
    it would on a real host (PostgreSQL is a postmaster and its backends).
    """

    process: subprocess.Popen | None = None
    #: How long a SIGTERM may take before SIGKILL.
    stop_grace: float = 5.0

    def start(self):  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def stop(self) -> None:
        if self.process is not None:
            self.resume()  # a paused server cannot act on SIGTERM
            stop(self.process, grace=self.stop_grace)
            self.process = None

    def kill(self) -> None:
        """SIGKILL: the server is gone at once, as in a crash."""
        if self.process is not None:
            signal_group(self.process, signal.SIGKILL)
            self.process.wait()
            self.process = None

    def pause(self) -> None:
        """SIGSTOP: the server still holds its connections but answers nothing (from the
        moment this returns: every one of its threads has stopped)."""
        if self.process is not None:
            pause_group(self.process)

    def resume(self) -> None:
        if self.process is not None and self.process.poll() is None:
            signal_group(self.process, signal.SIGCONT)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
