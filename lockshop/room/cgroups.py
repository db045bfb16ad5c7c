"""The sandbox's cgroups: one interface, cgroup v1 and cgroup v2 behind it, chosen by what
the machine mounts.

What a grading gets either way: a group of its own, which its first process joins
before it runs anything else, with a memory limit (swap included), a limit on its
processes and its CPU time counted; from outside, its OOM kills, its refused forks and
its CPU are read, and every process left in it is killed at the end.

- **cgroup v1** (Debian 12 as this project's CI mounts it; systemd's hybrid layout): a
  memory, a pids and a cpuacct group, under this process's own group in each hierarchy,
  else at the hierarchy's top (a container may let us write only there).
- **cgroup v2** (Ubuntu 22.04 and later, Debian 12 on a laptop, Fedora, Docker Desktop):
  one group in the unified hierarchy, under lockshop's own group, ``lockshop``, with
  ``memory``, ``pids`` and ``cpu`` enabled in its ``cgroup.subtree_control``. The kernel
  lets a group hand controllers down only while it holds no process itself (the "no
  internal processes" rule), so lockshop's group is made:

  * in the group this process is in, when that group holds only this process and its
    children (a systemd scope with ``Delegate=yes``, as ``systemd-run --scope -p
    Delegate=yes ./run up`` makes): they move into a leaf of it, ``lockshop-manager``,
    and ``lockshop`` goes beside it;
  * else at the hierarchy's top, which the kernel exempts from that rule (root only).
    A container with a cgroup namespace of its own (Docker's default on cgroup v2) sees
    its own group as that top, ``/``, but the kernel does not exempt it: the hand-down
    is refused (EBUSY) while the container's processes are in it. Then, as container
    runtimes do, every process there moves into a leaf, ``lockshop-init``, and the
    hand-down is made again.

  The kill is ``cgroup.kill`` (Linux 5.14 and later); before 5.14, a SIGKILL to every
  process the group lists, until it lists none.

How it fails: making a group raises ``OSError`` naming what could not be done (a
read-only mount, as Docker gives a container; a controller the parent does not hand
down; not root), and nothing is left half made. ``probe`` says before a room opens which
limits this machine cannot enforce, and why: ``lockshop up`` then refuses to open the
room unless told to open it without them. ``use`` points this process at another mount
(a test points it at a read-only one).
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import signal
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from shop.i18n import lazy_gettext

LOGGER = logging.getLogger(__name__)

#: Where Linux mounts cgroups.
CGROUPS = Path("/sys/fs/cgroup")
#: The limits only a cgroup enforces (rlimits and the wall clock hold without one), as
#: ``Limits`` names them.
CGROUP_LIMITS = ("memory", "processes", "total CPU time")
#: cgroup v1's hierarchies a grading joins.
V1_CONTROLLERS = ("memory", "pids", "cpuacct")
#: cgroup v2's controllers lockshop's group hands down; cpu only for the room's database
#: server's share (a grading's CPU time is in ``cpu.stat`` with or without it).
V2_CONTROLLERS = ("memory", "pids", "cpu")
V2_REQUIRED = ("memory", "pids")
#: The cpu controller's period: a quota of one period per period is one core.
CPU_PERIOD_US = 100_000
#: Every group lockshop makes for a grading or a server starts so, then its owner's pid.
PREFIX = "lockshop-sandbox-"


@dataclass
class Usage:
    """What a run used, as far as its cgroup could tell."""

    peak_memory_bytes: int | None = None
    peak_processes: int | None = None
    cpu_seconds: float | None = None
    wall_seconds: float = 0.0


class RunGroup(ABC):
    """One grading's group."""

    @property
    @abstractmethod
    def procs(self) -> list[str]:
        """The ``cgroup.procs`` files the run's first process writes its pid into."""

    @abstractmethod
    def oom_kills(self) -> int: ...

    @abstractmethod
    def refused_forks(self) -> int: ...

    @abstractmethod
    def cpu_seconds(self) -> float | None: ...

    @abstractmethod
    def usage(self) -> Usage: ...

    @abstractmethod
    def pids(self) -> set[int]: ...

    @abstractmethod
    def kill_all(self, seconds: float = 10.0) -> None:
        """Kill every process left in the group, and wait until there are none."""

    @abstractmethod
    def remove(self) -> None: ...


class ServerGroup(ABC):
    """A long-lived server's group (the room's MariaDB): at most ``cpu_cores`` of the
    machine's CPU and ``memory_bytes`` of its memory, whatever a grading asks of it."""

    @abstractmethod
    def read(self, name: str) -> str:
        """A file of its group (``cpu.max``, ``memory.max``; v1: ``cpu.cfs_quota_us``...)."""

    @abstractmethod
    def remove(self) -> None:
        """Once the server has stopped (a group with a process in it stays)."""


class Hierarchy(ABC):
    version: str

    def __init__(self, root: Path) -> None:
        self.root = root

    @abstractmethod
    def run_group(self, memory_bytes: int, processes: int) -> RunGroup: ...

    @abstractmethod
    def server_group(self, pid: int, *, cpu_cores: float, memory_bytes: int) -> ServerGroup: ...

    @abstractmethod
    def groups_of(self, owner: int) -> list[Path]:
        """The groups that process ``owner`` made and that are still there."""


# --- which one: what the machine mounts ----------------------------------------------------

_root = CGROUPS
_hierarchies: dict[Path, Hierarchy] = {}
_choosing = threading.Lock()


def use(root: Path) -> None:
    """Make and read cgroups under ``root`` from now on, in this process (``up
    --cgroup-root``)."""
    global _root
    _root = Path(root)


def hierarchy(root: Path | None = None) -> Hierarchy | None:
    """The hierarchy mounted at ``root`` (by default, the one ``use`` named): v2 when it is
    the unified one, v1 when a v1 controller is mounted there, else None."""
    root = Path(root or _root)
    with _choosing:
        if root not in _hierarchies:
            if (root / "cgroup.controllers").is_file():
                _hierarchies[root] = V2(root)
            elif any((root / controller).is_dir() for controller in V1_CONTROLLERS):
                _hierarchies[root] = V1(root)
            else:
                return None
        return _hierarchies[root]


def run_group(memory_bytes: int, processes: int) -> RunGroup:
    """A new grading's group; ``OSError`` when there is no hierarchy or it cannot be
    written (its text lazy: said in the language of whoever reads it)."""
    found = hierarchy()
    if found is None:
        raise FileNotFoundError(_none_mounted(_root))
    return found.run_group(memory_bytes, processes)


def server_group(pid: int, *, cpu_cores: float, memory_bytes: int) -> ServerGroup:
    found = hierarchy()
    if found is None:
        raise FileNotFoundError(_none_mounted(_root))
    return found.server_group(pid, cpu_cores=cpu_cores, memory_bytes=memory_bytes)


@dataclass(frozen=True)
class Support:
    """What this machine's cgroups can enforce for the room."""

    #: "v1", "v2", or None when no hierarchy is mounted.
    version: str | None
    root: Path
    #: Why the cgroup limits cannot be enforced, or None: lazy, said in the reader's
    #: language, but for the system's own words (an errno's text) in it.
    problem: object | None = None
    #: False where no grading runs at all (not root, a tool missing): ``problem`` says why.
    grades: bool = True

    @property
    def unenforced(self) -> tuple[str, ...]:
        """The limits that do not hold here."""
        return CGROUP_LIMITS if self.problem else ()

    def as_dict(self) -> dict:
        return {"cgroups": self.version, "root": str(self.root),
                "unenforced": list(self.unenforced), "problem": self.problem,
                "grades": self.grades}


def probe(root: Path | None = None) -> Support:
    """Make one grading's group, limits and all, and remove it: whether it could be."""
    root = Path(root or _root)
    found = hierarchy(root)
    if found is None:
        return Support(None, root, lazy_gettext(
            "no cgroup hierarchy is mounted at %(root)s (neither cgroup v2's unified one nor "
            "v1's memory, pids, cpuacct)", root=root))
    try:
        found.run_group(64 << 20, 16).remove()
    except OSError as error:
        return Support(found.version, root, lazy_gettext(
            "cgroup %(version)s at %(root)s: %(error)s", version=found.version, root=root,
            error=error))
    return Support(found.version, root)


def _none_mounted(root: Path) -> object:
    return lazy_gettext("no cgroup hierarchy is mounted at %(root)s", root=root)


# --- cgroup v1 -----------------------------------------------------------------------------

class V1(Hierarchy):
    version = "v1"

    def run_group(self, memory_bytes: int, processes: int) -> RunGroup:
        return V1RunGroup(self.root, memory_bytes, processes)

    def server_group(self, pid: int, *, cpu_cores: float, memory_bytes: int) -> ServerGroup:
        return V1ServerGroup(self.root, pid, cpu_cores=cpu_cores, memory_bytes=memory_bytes)

    def groups_of(self, owner: int) -> list[Path]:
        own = own_v1_groups()
        return [folder for controller in V1_CONTROLLERS
                for place in {self.root / controller,
                              self.root / controller / own.get(controller, "/").lstrip("/")}
                for folder in place.glob(f"{PREFIX}{owner}-*")]


class V1RunGroup(RunGroup):
    """A memory, a pids and a cpuacct group of the run's own, under this process's."""

    def __init__(self, root: Path, memory_bytes: int, processes: int) -> None:
        self.folders: dict[str, Path] = {}
        name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        mine = own_v1_groups()
        try:
            for controller in V1_CONTROLLERS:
                self.folders[controller] = _make_v1(root, controller,
                                                    mine.get(controller, "/"), name)
            memory = self.folders["memory"]
            (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
            if (memory / "memory.memsw.limit_in_bytes").exists():
                # With swap on, the limit must hold for memory and swap together.
                (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            (self.folders["pids"] / "pids.max").write_text(str(processes))
        except OSError:
            self.remove()
            raise

    @property
    def procs(self) -> list[str]:
        return [str(folder / "cgroup.procs") for folder in self.folders.values()]

    def _read(self, controller: str, name: str) -> str:
        try:
            return (self.folders[controller] / name).read_text()
        except (OSError, KeyError):
            return ""

    def oom_kills(self) -> int:
        return _counter(self._read("memory", "memory.oom_control"), "oom_kill")

    def refused_forks(self) -> int:
        return _counter(self._read("pids", "pids.events"), "max")

    def cpu_seconds(self) -> float | None:
        nanoseconds = _number(self._read("cpuacct", "cpuacct.usage"))
        return nanoseconds / 1e9 if nanoseconds is not None else None

    def usage(self) -> Usage:
        return Usage(peak_memory_bytes=_number(self._read("memory", "memory.max_usage_in_bytes")),
                     peak_processes=_number(self._read("pids", "pids.peak")),
                     cpu_seconds=self.cpu_seconds())

    def pids(self) -> set[int]:
        found: set[int] = set()
        for folder in self.folders.values():
            found |= _listed(folder)
        return found

    def kill_all(self, seconds: float = 10.0) -> None:
        _kill_listed(self.pids, seconds)

    def remove(self) -> None:
        for folder in self.folders.values():
            _rmdir(folder)


class V1ServerGroup(ServerGroup):
    def __init__(self, root: Path, pid: int, *, cpu_cores: float, memory_bytes: int) -> None:
        self.folders: dict[str, Path] = {}
        name = f"{PREFIX}{os.getpid()}-server-{secrets.token_hex(4)}"
        mine = own_v1_groups()
        try:
            for controller in ("cpu", "memory"):
                self.folders[controller] = _make_v1(root, controller,
                                                    mine.get(controller, "/"), name)
            cpu, memory = self.folders["cpu"], self.folders["memory"]
            (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (cpu / "cpu.cfs_quota_us").write_text(str(round(cpu_cores * CPU_PERIOD_US)))
            (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
            for folder in self.folders.values():
                (folder / "cgroup.procs").write_text(str(pid))  # with all its threads
        except OSError:
            self.remove()
            raise

    def read(self, name: str) -> str:
        controller = name.split(".", 1)[0]
        return (self.folders[controller] / name).read_text().strip()

    def remove(self) -> None:
        for folder in self.folders.values():
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                LOGGER.warning("sandbox: could not remove %s", folder)


def own_v1_groups() -> dict[str, str]:
    """This process's group per controller (cgroup v1's /proc/self/cgroup)."""
    found = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _number_, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            found[controller] = path
    return found


def _make_v1(root: Path, controller: str, parent: str, name: str) -> Path:
    """``name`` under ``parent`` in ``controller``'s hierarchy, else under its top."""
    base = root / controller
    last: OSError | None = None
    for place in (base / parent.lstrip("/"), base):
        _remove_stale(place)
        try:
            folder = place / name
            folder.mkdir()
            return folder
        except OSError as error:
            last = error
    if last is not None and last.strerror:
        raise PermissionError(lazy_gettext(
            "cannot make a %(controller)s cgroup under %(folder)s (%(error)s)",
            controller=controller, folder=base, error=last.strerror))
    raise PermissionError(lazy_gettext("cannot make a %(controller)s cgroup under %(folder)s",
                                       controller=controller, folder=base))


# --- cgroup v2 -----------------------------------------------------------------------------

class V2(Hierarchy):
    version = "v2"

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self._home: Path | None = None
        self._making = threading.Lock()

    def home(self) -> Path:
        """lockshop's own group, its controllers handed down: made once per process."""
        with self._making:
            if self._home is None:
                self._home = self._make_home()
            return self._home

    def _make_home(self) -> Path:
        own = own_v2_group()
        place = self.root / own.lstrip("/")
        members = _listed(place)
        if own != "/" and members and all(_is_ours(pid) for pid in members):
            # A group of our own (a delegated scope): we leave it for a leaf, so that it
            # holds no process and may hand its controllers down.
            _move_all(place, place / "lockshop-manager")
            base = place
            _hand_down(base)
        else:
            base = self.root  # the top: exempt from the rule, written by root only
            try:
                _hand_down(base)
            except OSError as error:
                if own != "/" or error.errno != errno.EBUSY:
                    raise
                # The top of a cgroup namespace (a container's): the kernel holds it to
                # the rule. Every process in it is the container's: they go to a leaf.
                _move_all(base, base / "lockshop-init")
                _hand_down(base)
        home = base / "lockshop"
        home.mkdir(exist_ok=True)
        _hand_down(home)
        LOGGER.info("sandbox: cgroup v2, gradings' groups under %s", home)
        return home

    def run_group(self, memory_bytes: int, processes: int) -> RunGroup:
        return V2RunGroup(self.home(), memory_bytes, processes)

    def server_group(self, pid: int, *, cpu_cores: float, memory_bytes: int) -> ServerGroup:
        return V2ServerGroup(self.home(), pid, cpu_cores=cpu_cores, memory_bytes=memory_bytes)

    def groups_of(self, owner: int) -> list[Path]:
        return list(self.home().glob(f"{PREFIX}{owner}-*"))


class V2RunGroup(RunGroup):
    """One group in the unified hierarchy: ``memory.max`` with no swap beyond it,
    ``pids.max``; its CPU read from ``cpu.stat``."""

    def __init__(self, home: Path, memory_bytes: int, processes: int) -> None:
        _remove_stale(home)
        self.folder = home / f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        self.folder.mkdir()
        try:
            (self.folder / "memory.max").write_text(str(memory_bytes))
            if (self.folder / "memory.swap.max").exists():  # absent without swap accounting
                (self.folder / "memory.swap.max").write_text("0")
            (self.folder / "pids.max").write_text(str(processes))
        except OSError:
            self.remove()
            raise

    @property
    def procs(self) -> list[str]:
        return [str(self.folder / "cgroup.procs")]

    def _read(self, name: str) -> str:
        try:
            return (self.folder / name).read_text()
        except OSError:
            return ""

    def oom_kills(self) -> int:
        return _counter(self._read("memory.events"), "oom_kill")

    def refused_forks(self) -> int:
        return _counter(self._read("pids.events"), "max")

    def cpu_seconds(self) -> float | None:
        text = self._read("cpu.stat")
        return _counter(text, "usage_usec") / 1e6 if text else None

    def usage(self) -> Usage:
        # memory.peak: Linux 5.19 and later; pids.peak: 6.1 and later.
        return Usage(peak_memory_bytes=_number(self._read("memory.peak")),
                     peak_processes=_number(self._read("pids.peak")),
                     cpu_seconds=self.cpu_seconds())

    def pids(self) -> set[int]:
        return _listed(self.folder)

    def kill_all(self, seconds: float = 10.0) -> None:
        try:
            (self.folder / "cgroup.kill").write_text("1")
        except FileNotFoundError:
            pass  # before Linux 5.14, or already removed: killed one by one below
        except OSError as error:
            LOGGER.warning("sandbox: cgroup.kill of %s: %s", self.folder, error)
        _kill_listed(self.pids, seconds)  # waits until the kernel lists none

    def remove(self) -> None:
        _rmdir(self.folder)


class V2ServerGroup(ServerGroup):
    def __init__(self, home: Path, pid: int, *, cpu_cores: float, memory_bytes: int) -> None:
        self.folder = home / f"{PREFIX}{os.getpid()}-server-{secrets.token_hex(4)}"
        self.folder.mkdir()
        try:
            (self.folder / "cpu.max").write_text(
                f"{round(cpu_cores * CPU_PERIOD_US)} {CPU_PERIOD_US}")
            (self.folder / "memory.max").write_text(str(memory_bytes))
            (self.folder / "cgroup.procs").write_text(str(pid))  # with all its threads
        except OSError:
            self.remove()
            raise

    def read(self, name: str) -> str:
        return (self.folder / name).read_text().strip()

    def remove(self) -> None:
        try:
            self.folder.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            LOGGER.warning("sandbox: could not remove %s", self.folder)


def own_v2_group() -> str:
    """This process's group in the unified hierarchy (``0::/path``)."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:] or "/"
    except OSError:
        pass
    return "/"


def _move_all(group: Path, leaf: Path) -> None:
    """Every process of ``group`` into its child ``leaf`` (made if missing)."""
    leaf.mkdir(exist_ok=True)
    for pid in _listed(group):
        try:
            (leaf / "cgroup.procs").write_text(str(pid))
        except ProcessLookupError:
            pass  # gone meanwhile


def _hand_down(folder: Path) -> None:
    """Enable the controllers lockshop needs in ``folder``'s children."""
    available = (folder / "cgroup.controllers").read_text().split()
    missing = [c for c in V2_REQUIRED if c not in available]
    if missing:
        raise PermissionError(lazy_gettext(
            "%(folder)s is not given the controllers %(missing)s (its cgroup.controllers: "
            "%(available)s): its parent must enable them in its cgroup.subtree_control",
            folder=folder, missing=" ".join(missing), available=" ".join(available) or "-"))
    enabled = (folder / "cgroup.subtree_control").read_text().split()
    wanted = [c for c in V2_CONTROLLERS if c in available and c not in enabled]
    if not wanted:
        return
    try:
        (folder / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
    except OSError as error:
        if "cpu" not in wanted:
            raise _explained(error, folder) from None
        # cpu alone may be refused (a real-time process in the group): memory and pids
        # are what a grading needs.
        try:
            (folder / "cgroup.subtree_control").write_text(
                " ".join(f"+{c}" for c in wanted if c != "cpu"))
        except OSError as second:
            raise _explained(second, folder) from None


def _explained(error: OSError, folder: Path) -> OSError:
    """``error`` with what it means here; lazy, but for the system's own words."""
    if error.errno == errno.EBUSY:  # the group holds processes of its own
        return OSError(error.errno, lazy_gettext(
            "%(folder)s has processes in it, so it may not hand controllers down (cgroup v2's "
            "no-internal-processes rule): run lockshop in a delegated scope (sudo "
            "systemd-run --scope -p Delegate=yes ./run up)", folder=folder))
    return OSError(error.errno, lazy_gettext(
        "cannot enable controllers in %(folder)s: %(error)s", folder=folder,
        error=error.strerror))


def _is_ours(pid: int) -> bool:
    """Whether ``pid`` is this process or one of its descendants."""
    me = os.getpid()
    for _depth in range(64):
        if pid == me:
            return True
        if pid <= 1:
            return False
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


# --- both ------------------------------------------------------------------------------------

def _counter(text: str, key: str) -> int:
    """A ``key value`` line's value in a flat-keyed file (``memory.events``)."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return 0


def _number(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def _listed(folder: Path) -> set[int]:
    try:
        return {int(p) for p in (folder / "cgroup.procs").read_text().split()}
    except OSError:
        return set()


def _kill_listed(listed, seconds: float) -> None:
    """SIGKILL whatever ``listed()`` returns, until it returns nothing."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = listed()
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)
    LOGGER.error("sandbox: processes %s outlived their grading", sorted(listed()))


def _rmdir(folder: Path) -> None:
    for _attempt in range(50):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)  # the last killed processes are still leaving


def _remove_stale(place: Path) -> None:
    """Empty groups left by a room that was killed before it could remove them."""
    for folder in place.glob(f"{PREFIX}*-*"):
        owner = folder.name.removeprefix(PREFIX).split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            try:
                folder.rmdir()
            except OSError:
                pass  # processes still in it, or already gone
