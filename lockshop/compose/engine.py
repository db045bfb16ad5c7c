"""A Docker engine of the check's own: Debian's ``dockerd`` on a socket, a data root and
an exec root under the project's runtime folder, stopped when the check ends.

Guarantees:

* Debian's ``docker.io``, ``docker-compose`` and ``debootstrap`` are installed with apt
  when missing, as ``./run`` installs Debian packages (waiting for dpkg's lock); the
  client used is Debian's ``/usr/bin/docker``, the one that matches the daemon, never
  whichever ``docker`` comes first on the PATH.
* Its containers get the CPU share their processes would get outside Docker
  (``CPU_SHARES``), not one process's share of a loaded machine.
* One check at a time: a second one, while the first holds the lock file, is refused.
* The daemon manages no iptables rules and makes no default bridge: the machine's
  firewall and a system Docker's ``docker0`` are left alone. Containers reach each
  other on the networks compose makes and nothing outside; builds, which need Debian's
  mirror, run on the host's network (``images.py``).
* Whatever happens (a failure, Ctrl-C, SIGTERM, the check killed: the daemon gets
  SIGTERM with its parent), the daemon is stopped, and a daemon a crashed check left
  behind is stopped before a new one starts. Only that daemon: the process its pid file
  names is signalled only if it is ``dockerd`` on this folder's data root (after a
  reboot the pid may be anyone's).
* Its folder is the running user's alone (``private_folder``): it holds the pid file
  of a process that root signals, and the data root whose images root runs.

How it fails: ``EngineError``, one readable line (no apt-get, an install that failed,
a folder another user could write in, a daemon that exited or did not answer in time,
with the last line of its log).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

from lockshop.cluster.processes import last_line, spawn, stop
from shop.i18n import _

DOCKER = "/usr/bin/docker"
DOCKERD = "/usr/sbin/dockerd"
COMPOSE = "/usr/bin/docker-compose"
DEBOOTSTRAP = "/usr/sbin/debootstrap"
#: Debian package -> the program it brings.
PACKAGES = {"docker.io": DOCKERD, "docker-compose": COMPOSE, "debootstrap": DEBOOTSTRAP}
#: As ./run's apt_install: wait for dpkg's lock rather than fail.
APT = ["apt-get", "-o", "DPkg::Lock::Timeout=600"]
#: How long the daemon may take to answer on its socket (a loaded machine, a cold start).
START_TIMEOUT_S = 90
#: How long one ``docker version`` may take while the daemon starts; a slower answer is
#: no answer yet, and it is asked again until START_TIMEOUT_S.
PROBE_TIMEOUT_S = 10


#: The cgroup every container of this daemon is put under (cgroupfs: under the root).
CGROUP = "lockshop-compose"
#: Its CPU weight: as much as the sixteen processes its containers run would have outside
#: Docker. Each container's cgroup has the weight of one process (1024), and all of them
#: together, under one parent, would otherwise get one process's share of a loaded
#: machine: seen here, Locust's workers missed their heartbeats and the master dropped them.
CPU_SHARES = 16 * 1024


def _share_the_cpu() -> None:
    """Give the containers' parent cgroup its weight; best effort (cgroup v1 or v2)."""
    root = Path("/sys/fs/cgroup")
    if (root / "cpu" / "cpu.shares").exists():
        folder, name, value = root / "cpu" / CGROUP, "cpu.shares", CPU_SHARES
    elif (root / "cgroup.controllers").exists():
        folder, name, value = root / CGROUP, "cpu.weight", CPU_SHARES * 100 // 1024
    else:
        return
    try:
        folder.mkdir(exist_ok=True)
        (folder / name).write_text(f"{value}\n")
    except OSError:
        pass  # the containers run, only more slowly on a loaded machine


class EngineError(RuntimeError):
    """The engine cannot be had; said in one line."""


def private_folder(folder: Path) -> Path:
    """``folder`` made (0700) if missing, refused if another user could have put or
    could change anything in it; its resolved path.

    A folder such as CI's /var/tmp/lockshop-compose sits in a world-writable parent: any
    local user could make it first, or a link of their own by that name, and fill it
    with a pid file root then signals and a data root whose images root then runs.
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    # lstat: the link itself, if the name is a link; stat: the folder it leads to.
    for status in (folder.lstat(), folder.stat()):
        if status.st_uid != os.geteuid():
            raise EngineError(_("%(folder)s belongs to another user (uid %(uid)s): remove "
                                "it, or choose another folder with LOCKSHOP_COMPOSE_DIR",
                                folder=folder, uid=status.st_uid))
    mode = stat.S_IMODE(folder.stat().st_mode)
    if mode & 0o022:
        raise EngineError(_("%(folder)s can be written by other users (mode %(mode)s): "
                            "chmod 700 it, or choose another folder with "
                            "LOCKSHOP_COMPOSE_DIR", folder=folder, mode=f"{mode:o}"))
    return folder.resolve()


def missing_packages() -> list[str]:
    return [package for package, program in PACKAGES.items() if not os.path.exists(program)]


def install_missing() -> list[str]:
    """Install what is missing with apt; the packages installed."""
    missing = missing_packages()
    if not missing:
        return []
    if shutil.which("apt-get") is None:
        raise EngineError(_("Docker is missing (%(packages)s) and there is no apt-get to "
                            "install it: install Debian's %(packages)s by hand",
                            packages=", ".join(missing)))
    if os.geteuid() != 0:
        raise EngineError(_("Docker is missing (%(packages)s): run the check as root, which "
                            "installs it and starts a Docker daemon of its own",
                            packages=", ".join(missing)))
    environment = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for step in ([*APT, "update", "-qq"], [*APT, "install", "-y", "-qq", *missing]):
        done = subprocess.run(step, env=environment, capture_output=True, text=True)
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip()).splitlines()
            raise EngineError(_("installing %(packages)s failed: %(said)s",
                                packages=", ".join(missing), said=said[-1] if said else
                                f"apt-get exited with {done.returncode}"))
    still = missing_packages()
    if still:
        raise EngineError(_("apt-get installed nothing that provides %(programs)s",
                            programs=", ".join(PACKAGES[p] for p in still)))
    return missing


class Engine:
    """``with Engine(folder) as engine``: a running daemon; ``engine.env`` for its clients."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.socket = folder / "docker.sock"
        self.log_path = folder / "dockerd.log"
        self.pidfile = folder / "dockerd.pid"
        self.process: subprocess.Popen | None = None
        self._lock_file = None

    @property
    def env(self) -> dict[str, str]:
        """The environment of a client of this daemon (docker, docker-compose)."""
        return dict(os.environ, DOCKER_HOST=f"unix://{self.socket}")

    def __enter__(self) -> Engine:
        private_folder(self.folder)
        self._take_the_lock()
        try:
            self._stop_a_leftover()
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        if self.process is not None:
            # dockerd stops its containers and its containerd on SIGTERM; what is left
            # after the grace is killed with the process group.
            stop(self.process, grace=60)
            self.process = None
            self.socket.unlink(missing_ok=True)  # ours: never another check's
            self._unmount()
        if self._lock_file is not None:
            self._lock_file.close()  # releases the lock
            self._lock_file = None

    def _unmount(self) -> None:
        """What the daemon mounted under its folders and left (seen: its data root, bound
        onto itself, stays mounted when it fails to start), deepest first."""
        mine = str(self.folder.resolve()) + "/"
        with open("/proc/self/mounts") as mounts:
            points = [line.split()[1] for line in mounts]
        for point in sorted((p for p in points if p.startswith(mine)), key=len, reverse=True):
            subprocess.run(["umount", point], capture_output=True)

    def docker(self, *arguments: str, check: bool = True, timeout: float | None = None
               ) -> subprocess.CompletedProcess:
        """Run Debian's docker client against this daemon; its output captured."""
        try:
            done = subprocess.run([DOCKER, *arguments], env=self.env, capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise EngineError(_("docker %(command)s did not answer in %(seconds)s s",
                                command=arguments[0], seconds=f"{timeout:g}")) from None
        if check and done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip()).splitlines()
            raise EngineError(_("docker %(command)s failed: %(said)s",
                                command=arguments[0],
                                said=said[-1] if said else done.returncode))
        return done

    # --- the daemon ------------------------------------------------------------------

    def _take_the_lock(self) -> None:
        lock = (self.folder / "check.lock").open("a+")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "?"
            lock.close()
            raise EngineError(_("another compose check is running (process %(pid)s); "
                                "wait for it to end", pid=holder)) from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        self._lock_file = lock

    def _stop_a_leftover(self) -> None:
        """A daemon whose check was killed (SIGKILL leaves no time to stop it); its pid
        file removed, which a daemon killed, or a reboot, leaves behind."""
        try:
            pid = int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return
        # Asked again before each signal: the pid may be freed and given to another.
        try:
            if self._is_our_daemon(pid):
                os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and self._is_our_daemon(pid):
                    time.sleep(0.2)
                if self._is_our_daemon(pid):
                    os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # it ended by itself meanwhile
        # dockerd refuses to start while its pid file names a running process, anyone's.
        self.pidfile.unlink(missing_ok=True)

    def _is_our_daemon(self, pid: int) -> bool:
        """Whether ``pid`` is a dockerd on this folder's data root, as ``_start`` starts
        it (a process that has ended, a zombie included, has no command line)."""
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return False
        arguments = command.split("\0")
        data_root = str(self.folder / "data")
        return (os.path.basename(arguments[0]) == "dockerd"
                and any(flag == "--data-root" and value == data_root
                        for flag, value in zip(arguments, arguments[1:])))

    def _start(self) -> None:
        self.socket.unlink(missing_ok=True)
        self.log_path.unlink(missing_ok=True)
        self.process = spawn([
            DOCKERD, "--host", f"unix://{self.socket}",
            "--data-root", str(self.folder / "data"), "--exec-root", str(self.folder / "exec"),
            "--pidfile", str(self.pidfile),
            # The machine's firewall stays as it was, and so does a system Docker's bridge.
            "--iptables=false", "--ip6tables=false", "--ip-masq=false", "--bridge=none",
            "--cgroup-parent", f"/{CGROUP}",
        ], env=dict(os.environ), log_path=self.log_path)
        _share_the_cpu()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise EngineError(_("the Docker daemon could not start (exit %(code)s): "
                                    "%(said)s (log: %(log)s)", code=self.process.returncode,
                                    said=last_line(self.log_path), log=self.log_path))
            if self.socket.exists() and self._answers():
                return
            time.sleep(0.3)
        raise EngineError(_("the Docker daemon did not answer in %(seconds)s s: %(said)s "
                            "(log: %(log)s)", seconds=START_TIMEOUT_S,
                            said=last_line(self.log_path), log=self.log_path))

    def _answers(self) -> bool:
        """Whether the starting daemon answers ``docker version``; a slow answer (a loaded
        machine) is no answer yet."""
        try:
            return self.docker("version", check=False, timeout=PROBE_TIMEOUT_S).returncode == 0
        except EngineError:
            return False
