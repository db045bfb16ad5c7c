"""Running a command where a student's code cannot hurt the machine: bubblewrap, cgroups, rlimits.

One run, from the outside in:

- a cgroup per run (``lockshop.room.cgroups``: cgroup v1's memory, pids and cpuacct
  groups, or one group in cgroup v2's unified hierarchy, as the machine mounts them),
  which the run's first process joins before it executes anything else (a line of ``sh``);
- rlimits set by ``prlimit``: CPU seconds per process, open files, file size, no core;
- ``bwrap`` (run as root, so that it can bind what root can read) giving the run its own
  network namespace with loopback only, its own PID, IPC and UTS namespaces, the system
  and the project read-only, the folders a student must not read hidden under empty
  tmpfs, and a private ``/tmp`` of capped size;
- ``setpriv`` dropping to an unprivileged user (``nobody``) with no capabilities, and
  no way to gain any, before the command runs: root-only files stay closed to it. Or, for
  a grader that keeps the student's code in processes of its own (``grader_user``), to a
  user of the grader's own (``GRADER``) with only the capabilities to start processes as
  ``nobody`` and to signal them: the student's processes then run as another user than
  the grader, which they can neither signal nor trace.
- in a run with two users, before the drop, a firewall rule in the run's own network
  namespace (nftables, as root there: nothing changes on the machine) that refuses
  ``nobody`` every packet to ``WALLED`` (127.0.0.2, loopback too on Linux), where the
  grader keeps the servers the student's code must reach only through the grader's
  proxies: ZooKeeper, which asks for no password, so that no lock can go round the proxy
  the grader counts its watches on. A refused connection is reset at once (it fails, it
  does not hang). Where the rule cannot be made (no ``nft``), the run goes on without
  it and its result's ``unwalled`` says so; where it fails inside the run, the run stops
  before any of the student's code.

We watch from outside: the wall clock, the cgroup's OOM kills, refused forks and CPU,
and the bytes the run prints. At any limit the whole run is killed at once (bwrap's
init dies with its parent, which takes the PID namespace with it, and every process
left in the cgroup is killed), and the result names the limit.

Why not bwrap's own ``--unshare-user --uid``: as root, that maps the sandbox's user to
root outside, and root outside can read every root-only file. A real unprivileged user
cannot, whatever the namespace.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lockshop.cluster.network import BEHIND_PROXIES
from lockshop.room import cgroups
from lockshop.room.cgroups import RunGroup, Usage
from shop.i18n import _, lazy_gettext

LOGGER = logging.getLogger(__name__)

MB = 1 << 20
GB = 1 << 30
#: The unprivileged user the student's code runs as (Debian's ``nobody``/``nogroup``).
NOBODY = 65534
#: A run with two users (``run(..., grader_user=GRADER)``): the grader's own, unprivileged
#: user and group, which owns no file (no account of the system has this id); and the
#: only capabilities it keeps, to start the student's processes as ``NOBODY`` and to
#: stop, pause and kill them.
GRADER = 65533
GRADER_CAPABILITIES = "+setuid,+setgid,+kill"
#: In a run with two users: the loopback address that ``NOBODY`` may not reach
#: (``WALL_RULES``), where the grader's own servers listen behind its proxies.
WALLED = BEHIND_PROXIES.address
#: The rule, in the run's own network namespace: the student's user gets a TCP reset
#: (anything else, an ICMP refusal) for any packet to ``WALLED``. Loopback traffic
#: passes the output hook once, so a packet refused there never reaches a listener.
WALL_RULES = f"""table inet lockshop_wall {{
  chain output {{
    type filter hook output priority 0; policy accept;
    meta skuid {NOBODY} ip daddr {WALLED} meta l4proto tcp reject with tcp reset
    meta skuid {NOBODY} ip daddr {WALLED} reject
  }}
}}
"""
#: Where a run's private, writable folder is, inside the sandbox.
INSIDE_TMP = "/tmp"

#: The limits' names, as ``SandboxRun.limit`` says them.
MEMORY, CPU, PROCESSES, OUTPUT, WALL = "memory", "cpu", "processes", "output", "wall"

#: Folders no grading may read: other users' homes, this machine's work, its servers'
#: data, its logs and sockets. A run sees empty folders there (the project and the
#: Python it runs on are bound back read-only on top).
HIDDEN = ("/root", "/home", "/work", "/tmp", "/var/tmp", "/run", "/var/run", "/var/lib",
          "/var/log", "/var/spool", "/var/mail", "/var/backups", "/var/cache", "/srv",
          "/mnt", "/media", "/opt", "/boot", "/etc/ssh", "/etc/ssl/private", "/lost+found")

#: Started before anything else in the run, as root: join the run's cgroups (their
#: ``cgroup.procs`` files are the arguments before ``--``), then become the rest.
_JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
#: Started inside bwrap, as root in the run's own network namespace, before the drop:
#: the wall (its rules are the first argument), then the rest. If the wall cannot be put
#: up there, nothing of the student's runs.
_WALL = ('printf "%s" "$1" | PATH=/usr/sbin:/sbin:$PATH nft -f - '
         '|| { echo "sandbox: the wall could not be put up" >&2; exit 125; }; '
         'shift; exec "$@"')


@dataclass(frozen=True)
class Limits:
    """What one grading may use. The defaults have headroom over a whole grading of a
    right lock, sale included (its Redis or ZooKeeper JVM, holder processes, three
    gunicorn shop instances). Measured on two cores (``scripts/room_bench.py`` prints
    it): exercise 3 peaked at 414 MB (memory and its tmpfs), 66 tasks, 5 s of CPU and
    15 to 21 s of wall time; exercise 8 (the ZooKeeper JVM) at 466 MB, 153 tasks, 6 s
    of CPU and 16 s."""

    memory_bytes: int = 1 * GB
    #: Per process (RLIMIT_CPU): a loop in one process ends here at the latest.
    cpu_seconds: int = 60
    #: All the run's processes together (v1's cpuacct, v2's cpu.stat).
    total_cpu_seconds: float = 60.0
    #: Counted as the kernel counts them: threads too (a ZooKeeper JVM has ~40).
    processes: int = 384
    open_files: int = 1024
    #: Everything the run prints (its stdout and stderr; the report channel apart).
    output_bytes: int = 1 * MB
    #: The largest file it may write (RLIMIT_FSIZE).
    file_bytes: int = 64 * MB
    #: The size of its private /tmp (counted in its memory too: it is a tmpfs).
    tmp_bytes: int = 256 * MB
    wall_seconds: float = 120.0


@dataclass
class SandboxRun:
    returncode: int | None
    #: The limit that stopped it (``MEMORY``, ``CPU``, ...), or None.
    limit: str | None
    #: The last few KB it printed (stdout and stderr), for saying why it failed.
    output_tail: str
    usage: Usage
    #: Why this run's memory, process and total CPU time limits did not hold (its cgroup
    #: could not be made, and ``run`` was told to go on without it), or None.
    unenforced: str | None = None
    #: In a run with two users: why ``NOBODY`` could reach ``WALLED`` (the rule could not
    #: be made on this machine: ``wall_unavailable``, in the reader's language), or None.
    unwalled: object | None = None


class SandboxUnavailable(RuntimeError):
    """bwrap, setpriv or prlimit is missing: nothing of a student's may run."""


class LimitsUnavailable(RuntimeError):
    """The run's cgroup could not be made: its memory, process and total CPU time limits
    would not hold, so it did not run. Its text is the system's reason."""


def limit_message(limit: str, limits: Limits) -> str:
    """The one line a student reads when ``limit`` stopped their grading (in the current
    language)."""
    if limit == MEMORY:
        return _("stopped: used more than %(size)s of memory", size=size(limits.memory_bytes))
    if limit == CPU:
        return _("stopped: used more than %(seconds)s s of CPU time",
                 seconds=f"{limits.total_cpu_seconds:g}")
    if limit == PROCESSES:
        return _("stopped: started more than %(count)s processes", count=limits.processes)
    if limit == OUTPUT:
        return _("stopped: printed more than %(size)s", size=size(limits.output_bytes))
    return _("stopped: ran longer than %(seconds)s s", seconds=f"{limits.wall_seconds:g}")


def size(count: int) -> str:
    """``1 GB``, ``1.5 GB``, ``256 MB``, ``640 KB``."""
    for unit, name in ((GB, "GB"), (MB, "MB"), (1024, "KB")):
        if count >= unit:
            return f"{count / unit:.1f}".removesuffix(".0") + f" {name}"
    return f"{count} B"


def missing_tools() -> list[str]:
    return [tool for tool in ("bwrap", "setpriv", "prlimit") if shutil.which(tool) is None]


@functools.cache
def wall_unavailable() -> object | None:
    """Why ``WALL_RULES`` cannot be put up on this machine (no ``nft``, or nftables
    refused in a network namespace of its own), in the reader's language, or None when it
    can: tried once, in a namespace made for the try and gone with it."""
    tools = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    for tool, package in (("nft", "nftables"), ("unshare", "util-linux")):
        if shutil.which(tool, path=tools["PATH"]) is None:
            return lazy_gettext("%(tool)s is not installed (Debian package %(package)s; "
                                "./run installs it)", tool=tool, package=package)
    tried = subprocess.run(["unshare", "--net", "--", "nft", "-f", "-"], input=WALL_RULES,
                           capture_output=True, text=True, env=tools)
    if tried.returncode != 0:
        said = (tried.stderr.strip() or f"status {tried.returncode}").splitlines()[-1]
        return lazy_gettext("nft could not put the rule up: %(said)s", said=said)
    return None


# --- what the run sees -------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    """The file system a run sees: ``/`` read-only, ``hidden`` folders empty, ``shown``
    folders bound back read-only inside hidden ones, ``mounts`` (source, place inside)
    bound read-only, and a private ``/tmp``."""

    hidden: tuple[str, ...] = HIDDEN
    shown: tuple[str, ...] = ()
    mounts: tuple[tuple[str, str], ...] = ()


def python_view(*, hidden: Iterable[Path | str] = (),
                mounts: Iterable[tuple[Path | str, str]] = ()) -> View:
    """The view for running this project's Python: the project, its virtual environment
    and the Python under it shown; the project's runtime folder (``.lockshop``, where
    ``up`` keeps its admin token and the room's database) and ``hidden`` hidden."""
    import lockshop
    project = Path(lockshop.__file__).resolve().parent.parent
    shown = {project, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
             Path(sys.executable).resolve().parent.parent}
    hide = [*HIDDEN, str(project / ".lockshop"), *(str(Path(h).resolve()) for h in hidden)]
    return View(hidden=tuple(dict.fromkeys(hide)), shown=tuple(sorted(map(str, shown))),
                mounts=tuple((str(Path(s).resolve()), inside) for s, inside in mounts))


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def bwrap_arguments(view: View, limits: Limits) -> list[str]:
    """bwrap's options for ``view``, parents before children (a folder bound inside a
    hidden one is bound after it is hidden)."""
    steps: list[tuple[int, int, list[str]]] = []

    def add(path: str, order: int, args: list[str]) -> None:
        steps.append((len(Path(path).parts), order, args))

    for folder in view.hidden:
        if folder == INSIDE_TMP:
            continue
        if os.path.isdir(folder) and not os.path.islink(folder):
            add(folder, 0, ["--tmpfs", folder])
    add(INSIDE_TMP, 0, ["--perms", "1777", "--size", str(limits.tmp_bytes),
                        "--tmpfs", INSIDE_TMP])
    tmpfs = [f for f in (*view.hidden, INSIDE_TMP) if os.path.isdir(f)]
    for folder in view.shown:
        cover = [h for h in tmpfs if _under(folder, h) and h != folder]
        inside_shown = any(_under(folder, other) and other != folder for other in view.shown)
        if not cover or inside_shown:
            continue  # visible through / already, or through the folder it is in
        # Folders bwrap makes inside a tmpfs are root's and closed (0700): open the ones
        # on the way, so that nobody can walk to what is shown.
        top = max(cover, key=len)
        between = Path(folder).relative_to(top).parts[:-1]
        for depth in range(1, len(between) + 1):
            add(str(Path(top, *between[:depth])), 1,
                ["--perms", "0755", "--dir", str(Path(top, *between[:depth]))])
        add(folder, 2, ["--ro-bind", folder, folder])
    for source, inside in view.mounts:
        add(inside, 2, ["--ro-bind", source, inside])
    # A hidden folder inside a shown one (the project's runtime folder) comes after it.
    ordered = sorted(steps, key=lambda step: (step[0], step[1]))
    return [arg for _depth, _order, args in ordered for arg in args]


# --- running -----------------------------------------------------------------------------


def run(command: Sequence[str], limits: Limits, view: View, *,
        on_report: Callable[[bytes], None] = lambda _: None,
        env: dict[str, str] | None = None, max_line: int = 64 * 1024,
        max_report: int = 4 * MB, grader_user: int | None = None,
        without_limits: bool = False) -> SandboxRun:
    """Run ``command`` in the sandbox until it ends or a limit stops it.

    The command finds a pipe's write end in ``$LOCKSHOP_REPORT_FD``: each line written
    there is handed to ``on_report`` (lines longer than ``max_line`` are dropped; past
    ``max_report`` bytes the run is stopped as printing too much). What it prints on
    stdout and stderr only counts against ``limits.output_bytes``; its tail is kept.

    The command runs as ``NOBODY`` with no capabilities; with ``grader_user``, as that
    user instead, keeping ``GRADER_CAPABILITIES`` and nothing else, so that it can run
    what it does not trust as ``NOBODY`` (which can then neither signal, trace nor read
    it: another user's process).

    Where the run's cgroup cannot be made, nothing runs: ``LimitsUnavailable`` says why.
    Only ``without_limits`` (a room opened with ``--room-without-limits``) lets it run on
    its rlimits and the wall clock alone, and the result's ``unenforced`` says why.

    With ``grader_user``, ``NOBODY`` may not reach ``WALLED`` (``WALL_RULES``). Where the
    rule cannot be made on this machine the run goes on without it (it keeps a lock off
    the grader's own servers, which a grading can still do without: the checks that count
    through a proxy are then the ones that can be fooled), and the result's ``unwalled``
    says why, for the student's message."""
    missing = missing_tools()
    if missing:
        raise SandboxUnavailable(f"missing {', '.join(missing)} (Debian packages bubblewrap, "
                                 "util-linux); ./run installs them")
    if os.geteuid() != 0:
        raise SandboxUnavailable("the sandbox needs root: it binds what root can read, "
                                 "then runs the student's code as nobody")
    unenforced: str | None = None
    try:
        group: RunGroup | None = cgroups.run_group(limits.memory_bytes, limits.processes)
    except OSError as error:
        if not without_limits:
            raise LimitsUnavailable(str(error)) from error
        group, unenforced = None, str(error)
        LOGGER.warning("sandbox: a grading runs without its cgroup limits: %s", error)
    report_read, report_write = os.pipe()
    output_read, output_write = os.pipe()
    inside_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": INSIDE_TMP,
                  "TMPDIR": INSIDE_TMP, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
                  "PYTHONUNBUFFERED": "1", "LOCKSHOP_REPORT_FD": str(report_write),
                  **(env or {})}
    unwalled = wall_unavailable() if grader_user is not None else None
    if unwalled is not None:
        LOGGER.warning("sandbox: a grading runs without the wall before %s: %s", WALLED,
                       unwalled)
    argv = _command_line(command, limits, view, inside_env, group, grader_user,
                         wall=grader_user is not None and unwalled is None)
    state = _Watch(limits)
    started = time.monotonic()
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output_write,
                                   stderr=output_write, pass_fds=(report_write,),
                                   env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                                   start_new_session=True)
    except OSError:
        os.close(report_read)
        os.close(output_read)
        if group is not None:
            group.remove()
        raise
    finally:
        os.close(report_write)
        os.close(output_write)
    readers = [threading.Thread(target=state.read_output, args=(output_read,), daemon=True),
               threading.Thread(target=state.read_report,
                                args=(report_read, on_report, max_line, max_report),
                                daemon=True)]
    for reader in readers:
        reader.start()
    try:
        returncode = _watch(process, state, group, limits, started)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if group is not None:
            group.kill_all()
        for reader in readers:
            reader.join(10)
        usage = group.usage() if group is not None else Usage()
        if group is not None:
            group.remove()
    usage.wall_seconds = round(time.monotonic() - started, 2)
    return SandboxRun(returncode, state.limit, state.tail(), usage, unenforced, unwalled)


def _command_line(command: Sequence[str], limits: Limits, view: View, env: dict[str, str],
                  group: RunGroup | None, grader_user: int | None = None, *,
                  wall: bool = False) -> list[str]:
    rlimits = [f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 5}",
               f"--nofile={limits.open_files}:{limits.open_files}",
               f"--fsize={limits.file_bytes}:{limits.file_bytes}", "--core=0:0"]
    if group is None:
        # Without a pids cgroup, a per-user count: shared by every grading running now.
        rlimits.append(f"--nproc={limits.processes}:{limits.processes}")
    bwrap = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
             # No cgroup namespace: the JVM reads its limits at /proc/self/cgroup's paths
             # under /sys/fs/cgroup, and fails to start if the two disagree.
             "--hostname", "sandbox", "--die-with-parent",
             "--new-session", "--ro-bind", "/", "/", *bwrap_arguments(view, limits),
             "--proc", "/proc", "--dev", "/dev", "--chdir", INSIDE_TMP, "--clearenv"]
    for name, value in env.items():
        bwrap += ["--setenv", name, value]
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    if grader_user is not None:
        kept = f"-all,{GRADER_CAPABILITIES}"
        drop = ["setpriv", f"--reuid={grader_user}", f"--regid={grader_user}",
                "--clear-groups", f"--inh-caps={kept}", f"--ambient-caps={kept}",
                f"--bounding-set={kept}", "--no-new-privs", "--"]
    joined = group.procs if group is not None else []
    walled = ["/bin/sh", "-c", _WALL, "sh", WALL_RULES] if wall else []
    return ["/bin/sh", "-c", _JOIN, "sh", *joined, "--", "prlimit", *rlimits, "--",
            *bwrap, "--", *walled, *drop, *command]


class _Watch:
    """What the readers saw: bytes printed, the first limit hit."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.printed = 0
        self.limit: str | None = None
        self.stop = threading.Event()
        self._tail = bytearray()
        self._lock = threading.Lock()

    def hit(self, limit: str) -> None:
        with self._lock:
            if self.limit is None:
                self.limit = limit
        self.stop.set()

    def tail(self) -> str:
        return bytes(self._tail).decode("utf-8", "replace")

    def read_output(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=0) as stream:
            while chunk := stream.read(64 * 1024):
                self.printed += len(chunk)
                self._tail = (self._tail + chunk)[-4096:]
                if self.printed > self.limits.output_bytes:
                    self.hit(OUTPUT)
                    return  # closing our end: whatever it prints next gets EPIPE

    def read_report(self, fd: int, on_report: Callable[[bytes], None], max_line: int,
                    max_report: int) -> None:
        received = 0
        pending = bytearray()
        dropping = False
        with os.fdopen(fd, "rb", buffering=0) as stream:
            while chunk := stream.read(64 * 1024):
                received += len(chunk)
                if received > max_report:
                    self.hit(OUTPUT)
                    return
                pending += chunk
                while (end := pending.find(b"\n")) >= 0:
                    line, pending = bytes(pending[:end]), pending[end + 1:]
                    if not dropping:
                        _hand_over(on_report, line)
                    dropping = False
                if len(pending) > max_line:
                    pending.clear()
                    dropping = True  # the rest of an over-long line, up to its end
            if pending and not dropping:
                _hand_over(on_report, bytes(pending))


def _hand_over(on_report: Callable[[bytes], None], line: bytes) -> None:
    try:
        on_report(line)
    except Exception:  # noqa: BLE001 - a caller's bug must not leave the run unread
        LOGGER.exception("sandbox: the report's reader failed on a line")


def _watch(process: subprocess.Popen, state: _Watch, group: RunGroup | None,
           limits: Limits, started: float) -> int | None:
    """Poll until the run ends or hits a limit (then kill it); its exit status."""
    while True:
        returncode = process.poll()
        if group is not None:
            if group.oom_kills():
                state.hit(MEMORY)
            elif group.refused_forks():
                state.hit(PROCESSES)
            elif (group.cpu_seconds() or 0) > limits.total_cpu_seconds:
                state.hit(CPU)
        if returncode is not None:
            if returncode in (128 + signal.SIGXCPU, -signal.SIGXCPU) and state.limit is None:
                state.hit(CPU)
            return returncode
        if time.monotonic() - started > limits.wall_seconds:
            state.hit(WALL)
        if state.stop.is_set():
            # Killing bwrap kills its init (--die-with-parent), and with it the PID
            # namespace; the cgroup sweep catches whatever was on its way out.
            process.kill()
            process.wait()
            if group is not None:
                group.kill_all()
            return None
        state.stop.wait(0.05)
