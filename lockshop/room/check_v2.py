"""``lockshop sandbox check-v2``: the sandbox's hostile gradings, on a real cgroup v2 kernel.

A machine that mounts cgroup v1 (as this project's CI machine does) never runs the
sandbox's cgroup v2 code, and a laptop that mounts v2 is where a workshop meets it. So
this command boots one, and runs there what ``tests/test_sandbox.py`` runs here:

1. the tools: ``qemu-system-x86_64`` and ``debootstrap``, installed with apt when missing;
2. a Debian root made by ``debootstrap`` (bookworm, with Debian's own kernel
   ``linux-image-amd64``, an initramfs that can mount a 9p root, Python, bubblewrap,
   util-linux's ``setpriv`` and ``prlimit``, ``nft`` for the sandbox's wall,
   ``redis-server``), built once and kept in the cache folder (named by what it is made
   of: a changed package list makes a new one): a second run starts at step 3;
3. the kernel booted under qemu with software emulation (TCG: it needs no KVM, which
   may be missing or refuse), its root the cached one over 9p, read-only; the project,
   its virtual environment and the Python under it shared in, read-only, at the same
   paths; no network device (a grading's loopback is all it has);
4. inside, PID 1 mounts cgroup2 only (the kernel is told ``cgroup_no_v1=all``), makes a
   delegated group as systemd's ``Delegate=yes`` scope does and moves into it, and runs
   the hostile gradings of ``tests/test_sandbox.py`` (8 GB of memory, a fork bomb, a busy
   loop, a sleep, 100 MB of output): each must end with its own limit named while a
   server of the test keeps answering, and leave no cgroup behind.

Each step's time is printed, then one verdict. Exit 0 only when every grading was stopped
by its own limit on cgroup v2; 1 when one was not (a test failed); 2 when the check could
not run (no apt, a failed build, a VM that did not finish in ``DEADLINE_S``, a pytest
that collected no test or ended without a failed test to show for its exit status). The
VM is killed on every way out: no qemu outlives the command.

Why ``vm.overcommit_memory=1`` inside: the VM has 3 GB, and Linux's default heuristic
refuses one 8 GB allocation outright on a machine that small (a MemoryError, no cgroup
involved). A laptop of 16 GB grants it, and then only the cgroup stands in the way: the
setting makes the small VM answer as the big laptop does.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import lockshop
from shop.i18n import _

#: What the root is made of. Python is the venv's if the project's venv runs on Debian's
#: Python (the same 3.11); the Python under it is shared in anyway, whichever it is.
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("linux-image-amd64", "initramfs-tools", "kmod", "busybox", "python3",
            "bubblewrap", "util-linux", "procps", "iproute2", "nftables", "redis-server")
#: The modules the initramfs needs to mount a root over 9p on virtio.
INITRAMFS_MODULES = ("9p", "9pnet_virtio", "virtio_pci")
#: What the tools come in.
TOOLS = {"qemu-system-x86_64": "qemu-system-x86", "debootstrap": "debootstrap"}
#: The tests run inside: each hostile grading of test_sandbox.
TESTS = ("tests/test_sandbox.py", "-k", "test_a_limit_stops_the_whole_grading_and_names_itself")
#: The most a run may take in the VM, boot included (software emulation is slow).
DEADLINE_S = 45 * 60
MEMORY = "3G"
CPUS = 2
#: How much slower the tests run in the VM than on the machine (tests/test_sandbox.py
#: multiplies its time budgets and bounds by it). Software emulation alone costs ten
#: times or so; on a loaded machine (two cores shared by seven suites) the grader's own
#: start, 1 s of CPU here, took more than 80 s of the VM's CPU time, so forty.
SLOWER = 40
#: A line of pytest's summary (-rA): how a test ended (the kernel may print in the
#: middle of -v's own lines, never in the summary's).
PYTEST_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED) (tests/\S+::\S+)")
#: What PID 1 prints; the host reads its lines.
MARK = "lockshop-check-v2:"
#: PID 1's line with pytest's exit status (the kernel may print on the same line, before
#: or after it: the console is one stream).
TESTS_EXIT = re.compile(re.escape(MARK) + r" tests exit (\d+)")

#: PID 1 in the VM. {project}, {python}, {tests} and {shares} are filled in per run.
INIT = r"""#!/bin/sh
# PID 1 of lockshop's cgroup v2 check (written by lockshop/room/check_v2.py).
PATH=/usr/sbin:/usr/bin:/sbin:/bin; export PATH
say() {{ echo "{mark} $*"; }}
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm /dev/pts 2>/dev/null
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=1777 tmpfs /var/tmp
mountpoint -q /run || mount -t tmpfs tmpfs /run
# cgroup v2 only: the kernel was told cgroup_no_v1=all.
mount -t cgroup2 cgroup2 /sys/fs/cgroup || say "no cgroup2"
{shares}
ip link set lo up
echo 1 > /proc/sys/vm/overcommit_memory
# As systemd does for a scope with Delegate=yes (systemd-run --scope -p Delegate=yes):
# the controllers handed down to a group that holds only the command, which lockshop may
# then divide as it likes.
echo "+cpu +memory +pids" > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/lockshop-check.scope
say "booted: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs"
say "mounted: $(grep cgroup /proc/mounts | cut -d' ' -f1-3 | tr '\n' ' ')"
say "scope's controllers: $(cat /sys/fs/cgroup/lockshop-check.scope/cgroup.controllers)"
cd {project}
say "tests begin"
sh -c 'echo $$ > /sys/fs/cgroup/lockshop-check.scope/cgroup.procs && exec "$@"' sh \
    env -i PATH="$PATH" HOME=/tmp LANG=C.UTF-8 LOCKSHOP_REQUIRE_SERVERS=1 \
    LOCKSHOP_TEST_SLOWER={slower} \
    PYTHONDONTWRITEBYTECODE=1 {python} -m pytest -p no:cacheprovider -n 0 -v -rA --color=no \
    --durations=0 {tests}
say "tests exit $?"
say "groups left: $(find /sys/fs/cgroup -name 'lockshop-sandbox-*' | wc -l)"
sync
echo o > /proc/sysrq-trigger
sleep 60
"""


def cache_folder() -> Path:
    """Where the root is kept: outside the project, shared by every clone on the machine."""
    return Path.home() / ".cache" / "lockshop" / "cgroup-v2-vm"


class CheckError(RuntimeError):
    """The check could not run (not: a limit did not hold)."""


def main(cache: Path | None = None, out=sys.stdout) -> int:
    cache = cache or cache_folder()
    started = time.monotonic()
    say = _Say(out, started)
    try:
        with say.step(_("tools (qemu-system-x86, debootstrap)")):
            ensure_tools(say)
        with say.step(_("root (debootstrap, cached)")):
            root = build_root(cache, say)
        with say.step(_("VM: boot, and the hostile gradings inside")):
            exit_status, lines = boot_and_test(root, say)
        ended = tests_ended(lines)
        say(_("in the VM: %(passed)s passed, %(other)s did not",
              passed=sum(ended.values()), other=sum(not passed for passed in ended.values())))
        if not ended:
            raise CheckError(_("pytest ended (exit %(status)s) without running a test",
                               status=exit_status))
        if exit_status != 0 and all(ended.values()):
            raise CheckError(_("pytest ended with exit %(status)s, and no test failed",
                               status=exit_status))
    except CheckError as error:
        say(_("could not check: %(error)s", error=error))
        say(_("VERDICT: NOT CHECKED (%(seconds)s s)",
              seconds=f"{time.monotonic() - started:.0f}"))
        return 2
    total = time.monotonic() - started
    if exit_status == 0 and all(ended.values()):
        say(_("VERDICT: HELD: every hostile grading stopped at its own limit on cgroup v2 "
              "(%(seconds)s s)", seconds=f"{total:.0f}"))
        return 0
    say(_("VERDICT: BROKEN: a limit did not hold on cgroup v2, see above (%(seconds)s s)",
          seconds=f"{total:.0f}"))
    return 1


def tests_ended(lines: list[str]) -> dict[str, bool]:
    """Each test pytest's summary named, and whether it passed (an error in its teardown,
    after a pass, is not a pass)."""
    ended: dict[str, bool] = {}
    for line in lines:
        found = PYTEST_LINE.search(line)
        if found:
            word, test = found.groups()
            ended[test] = ended.get(test, True) and word == "PASSED"
    return ended


class _Say:
    """Lines with the time since the check began; each step's own time at its end."""

    def __init__(self, out, started: float) -> None:
        self.out, self.started = out, started

    def __call__(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:7.1f} s] {text}", file=self.out, flush=True)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        began = time.monotonic()
        self(_("step: %(name)s", name=name))
        try:
            yield
        finally:
            self(_("step done: %(name)s in %(seconds)s s", name=name,
                   seconds=f"{time.monotonic() - began:.1f}"))


# --- 1. the tools ------------------------------------------------------------------------

def ensure_tools(say: _Say) -> None:
    missing = sorted({package for tool, package in TOOLS.items() if shutil.which(tool) is None})
    if not missing:
        say(_("tools: all there"))
        return
    if shutil.which("apt-get") is None:
        raise CheckError(_("need %(packages)s, and there is no apt-get to install them",
                           packages=", ".join(missing)))
    say(_("installing %(packages)s with apt", packages=" ".join(missing)))
    for command in (["apt-get", "-o", "DPkg::Lock::Timeout=600", "update", "-qq"],
                    ["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "-qq",
                     "--no-install-recommends", *missing]):
        _quiet(command, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


# --- 2. the root -------------------------------------------------------------------------

def root_key() -> str:
    """Changes with what the root is made of: a new recipe builds a new root."""
    recipe = "\n".join([SUITE, MIRROR, *PACKAGES, *INITRAMFS_MODULES])
    return hashlib.sha256(recipe.encode()).hexdigest()[:12]


def build_root(cache: Path, say: _Say) -> Path:
    """The cached root, made if missing (a half-made one, from a run cut short, is made
    again: only a finished root is marked)."""
    root = cache / f"root-{SUITE}-{root_key()}"
    if (root / ".lockshop-complete").exists():
        say(_("root: cached at %(folder)s", folder=root))
        return root
    if os.geteuid() != 0:
        raise CheckError(_("making the VM's root with debootstrap needs root"))
    cache.mkdir(parents=True, exist_ok=True)
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    say(_("root: debootstrap %(suite)s into %(folder)s (minutes)", suite=SUITE, folder=partial))
    _quiet(["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE,
            str(partial), MIRROR])
    modules = partial / "etc" / "initramfs-tools" / "modules"
    modules.write_text(modules.read_text() + "".join(f"{m}\n" for m in INITRAMFS_MODULES))
    say(_("root: an initramfs that mounts a 9p root"))
    with _mounted_proc(partial):
        _quiet(["chroot", str(partial), "update-initramfs", "-u", "-k", "all"])
    # What the root never needs: apt's downloaded packages.
    shutil.rmtree(partial / "var" / "cache" / "apt" / "archives", ignore_errors=True)
    (partial / "var" / "cache" / "apt" / "archives" / "partial").mkdir(parents=True)
    (partial / ".lockshop-complete").write_text(time.strftime("%Y-%m-%d %H:%M:%S\n"))
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    return root


@contextmanager
def _mounted_proc(root: Path) -> Iterator[None]:
    proc = root / "proc"
    subprocess.run(["mount", "-t", "proc", "proc", str(proc)], check=True)
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(proc)], check=False)


# --- 3 and 4. the VM and the tests inside -----------------------------------------------

def shared_folders() -> list[Path]:
    """The project, its virtual environment and the Python under it: each folder once,
    none inside another shared one."""
    project = Path(lockshop.__file__).resolve().parent.parent
    wanted = {project, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
              Path(os.path.realpath(sys.executable)).parent.parent}
    kept: list[Path] = []
    for folder in sorted(wanted, key=lambda f: len(f.parts)):
        if not any(folder.is_relative_to(other) for other in kept):
            kept.append(folder)
    return kept


def boot_and_test(root: Path, say: _Say) -> tuple[int, list[str]]:
    """Boot the VM, run the tests in it; (pytest's exit status, the VM's lines)."""
    kernels = sorted((root / "boot").glob("vmlinuz-*"))
    if not kernels:
        raise CheckError(_("no kernel in %(folder)s", folder=root / "boot"))
    kernel = kernels[-1]
    initrd = root / "boot" / kernel.name.replace("vmlinuz-", "initrd.img-")
    shares = shared_folders()
    project = Path(lockshop.__file__).resolve().parent.parent
    mounts = []
    qemu = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-smp", str(CPUS),
            "-m", MEMORY, "-display", "none", "-monitor", "none", "-serial", "stdio",
            "-no-reboot", "-nic", "none", "-kernel", str(kernel), "-initrd", str(initrd),
            "-append", "console=ttyS0 root=lockshoproot rootfstype=9p "
                       "rootflags=trans=virtio,version=9p2000.L,msize=512000,cache=loose ro "
                       "init=/lockshop-check-v2 cgroup_no_v1=all panic=-1 quiet",
            "-virtfs", f"local,path={root},mount_tag=lockshoproot,security_model=none,"
                       "readonly=on"]
    for number, folder in enumerate(shares):
        tag = f"share{number}"
        # The mount point, made in the cached root (read-only inside); and made again
        # inside, for a folder under /tmp or /var/tmp (a clone there): init mounts a tmpfs
        # over those, hiding what the root holds.
        (root / folder.relative_to("/")).mkdir(parents=True, exist_ok=True)
        mounts.append(f"mkdir -p {folder} 2>/dev/null; "
                      f"mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro "
                      f"{tag} {folder} || say 'cannot mount {folder}'")
        qemu += ["-virtfs", f"local,path={folder},mount_tag={tag},security_model=none,"
                            "readonly=on"]
    init = root / "lockshop-check-v2"
    init.write_text(INIT.format(mark=MARK, project=project, shares="\n".join(mounts),
                                python=Path(sys.executable).absolute(), slower=SLOWER,
                                tests=" ".join(TESTS)))
    init.chmod(0o755)
    say(_("VM: %(kernel)s, %(cpus)s CPUs, %(memory)s of memory, software emulation, no "
          "network; shared read-only: %(shared)s", kernel=kernel.name, cpus=CPUS,
          memory=MEMORY, shared=", ".join(map(str, shares))))
    lines: list[str] = []
    exit_status: int | None = None
    process = subprocess.Popen(qemu, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    timer = threading.Timer(DEADLINE_S, process.kill)
    timer.start()
    try:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not line.strip():
                continue
            lines.append(line)
            say(f"  vm| {line}")
            said = TESTS_EXIT.search(line)
            if said:
                exit_status = int(said.group(1))
        process.wait()
    finally:
        timer.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()
    if exit_status is None:
        raise CheckError(_("the VM ended (qemu exit %(status)s) before its tests said how "
                           "they ended", status=process.returncode))
    return exit_status, lines


def _quiet(command: list[str], env: dict[str, str] | None = None) -> None:
    """Run a set-up step; its output only if it fails."""
    with tempfile.TemporaryFile() as log:
        done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        if done.returncode != 0:
            log.seek(0)
            tail = log.read().decode("utf-8", "replace").splitlines()[-15:]
            raise CheckError(_("%(command)s failed (exit %(status)s): %(said)s",
                               command=" ".join(command[:3]), status=done.returncode,
                               said=" | ".join(tail)))


if __name__ == "__main__":
    sys.exit(main())
