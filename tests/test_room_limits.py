"""The room does not open silently without its limits.

Where the sandbox cannot write a cgroup, its memory, process and total CPU time limits do
not hold. The machine's own cgroups, bound read-only elsewhere (as Docker gives them to a
container), stand for such a machine: the kernel's real files, which refuse a write.
``lockshop up --cgroup-root`` is pointed there: it refuses to start, naming the limits
and why; with ``--room-without-limits`` it opens the room, says so, and the console shows
it to the instructor.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from helpers import chromium, lockshop_up, ports_for_up, require
from lockshop.cli import room_limits
from lockshop.cluster.redis_servers import redis_server_binary
from lockshop.room import cgroups, sandbox
from shop.i18n import language

pytestmark = pytest.mark.cluster

TOKEN = "room-limits-token"
UNENFORCED = "memory, process and total CPU time"


@pytest.fixture(autouse=True)
def _the_machine_s_cgroups_after(monkeypatch):
    """``room_limits`` names the process's cgroup root, as ``up --cgroup-root`` does: the
    worker's next test (a grading) must find the machine's again."""
    monkeypatch.setattr(cgroups, "_root", cgroups._root)


@pytest.fixture
def read_only_cgroups(tmp_path):
    """This machine's cgroup hierarchies, bound read-only under a folder of the test's."""
    require(os.geteuid() == 0, "binding the cgroups read-only needs root")
    real = cgroups.CGROUPS
    found = cgroups.hierarchy(real)
    require(found is not None, f"no cgroups mounted at {real}")
    root = tmp_path / "cgroup"
    pairs = ([(real, root)] if found.version == "v2" else
             [(real / c, root / c) for c in cgroups.V1_CONTROLLERS])
    bound = []
    try:
        for source, target in pairs:
            target.mkdir(parents=True)
            subprocess.run(["mount", "--bind", "-o", "ro", str(source), str(target)],
                           check=True, capture_output=True)
            bound.append(target)
        yield root
    finally:
        for target in reversed(bound):
            subprocess.run(["umount", str(target)], check=False)


def test_the_probe_finds_the_machine_s_cgroups_writable_and_a_read_only_copy_not(
        read_only_cgroups, tmp_path):
    writable = cgroups.probe(cgroups.CGROUPS)
    assert writable.problem is None and writable.unenforced == (), writable
    refused = cgroups.probe(read_only_cgroups)
    assert refused.version == writable.version
    assert refused.unenforced == ("memory", "processes", "total CPU time")
    assert "Read-only file system" in refused.problem, refused
    (tmp_path / "nothing").mkdir()
    assert cgroups.probe(tmp_path / "nothing").version is None
    assert "no cgroup hierarchy is mounted" in cgroups.probe(tmp_path / "nothing").problem


def test_up_refuses_to_open_a_room_whose_limits_it_cannot_enforce(read_only_cgroups,
                                                                    tmp_path):
    require(not sandbox.missing_tools(), f"missing {sandbox.missing_tools()}")
    done = subprocess.run(
        [sys.executable, "-m", "lockshop.cli", "up", "--instances", "1", "--port",
         str(ports_for_up(1)), "--cgroup-root", str(read_only_cgroups)],
        cwd=tmp_path, env={**os.environ, "LANGUAGE": "en"}, capture_output=True, text=True,
        timeout=120)
    assert done.returncode == 2, done
    said = done.stderr.strip().splitlines()
    assert len(said) == 1 and done.stdout == "", done
    assert f"cannot enforce its {UNENFORCED} limits" in said[0]
    assert "Read-only file system" in said[0] and "--room-without-limits" in said[0]
    assert not (tmp_path / ".lockshop").exists()  # refused before anything started


def test_with_room_without_limits_the_room_opens_and_the_console_says_what_does_not_hold(
        read_only_cgroups, tmp_path):
    require(redis_server_binary() is not None, "redis-server is not installed")
    require(not sandbox.missing_tools(), f"missing {sandbox.missing_tools()}")
    with lockshop_up("--instances", "1", "--port", str(ports_for_up(1)), "--gradings", "1",
                     "--cgroup-root", str(read_only_cgroups), "--room-without-limits",
                     cwd=tmp_path, env={**os.environ, "LOCKSHOP_ADMIN_TOKEN": TOKEN}) as text:
        assert f"the room opened WITHOUT its {UNENFORCED} limits" in text, text
        control = next(line.split(": ", 1)[1].strip() for line in text.splitlines()
                       if "control (labs, faults, sales):" in line)
        console = next(line.split()[1] for line in text.splitlines()
                       if line.startswith("console: "))
        state = requests.get(f"{control}/control/state", timeout=10).json()
        limits = state["room_limits"]
        assert limits["unenforced"] == ["memory", "processes", "total CPU time"], limits
        assert "Read-only file system" in limits["problem"]
        with chromium() as browser:
            page = browser.new_page(locale="en-US")
            page.set_default_timeout(60_000)
            page.goto(console)
            page.fill("#token", TOKEN)
            page.click("#token-form button")
            notice = page.locator("#room-limits")
            notice.wait_for(state="visible")
            shown = notice.inner_text()
    assert f"This room opened without its {UNENFORCED} limits" in shown
    assert "Read-only file system" in shown


def test_up_not_run_as_root_says_in_one_line_that_the_room_cannot_grade(monkeypatch,
                                                                          tmp_path):
    """Not root, no grading runs at all: ``up`` refuses, as it does where the limits do not
    hold, and ``--room-without-limits`` opens a room that says it grades nothing."""
    monkeypatch.setattr(room_limits.os, "geteuid", lambda: 1000)
    found = room_limits.room_limits(tmp_path)
    assert found.problem is not None and not found.grades, found
    with language("en"):
        said = room_limits.refusal(found)
    assert said.startswith("the room cannot grade on this machine (the sandbox needs root")
    assert "--room-without-limits" in said and "\n" not in said


@pytest.mark.parametrize("error, system_words", [
    (OSError(errno.EBUSY, "Device or resource busy"), None),
    (OSError(errno.EACCES, "Permission denied"), "Permission denied"),
], ids=["busy", "refused"])
def test_the_advice_in_a_cgroup_error_is_said_in_the_reader_s_language(error, system_words):
    """``up``'s refusal and the console's notice carry it: the advice is the catalog's, the
    system's own words (an errno's text) stay as the system said them."""
    explained = cgroups._explained(error, Path("/sys/fs/cgroup"))
    with language("en"):
        english = str(explained)
    with language("zh_CN"):
        chinese = str(explained)
    assert chinese != english and "/sys/fs/cgroup" in chinese
    if system_words:
        assert system_words in chinese
    else:
        assert "systemd-run --scope -p Delegate=yes" in chinese


def test_in_a_container_s_cgroup_namespace_its_processes_leave_the_top_first(monkeypatch,
                                                                              tmp_path):
    """A container with a cgroup namespace of its own sees its group as the top, ``/``,
    which the kernel does not exempt from cgroup v2's no-internal-processes rule: handing
    controllers down from it is refused (EBUSY) while processes are in it. lockshop moves
    them into a leaf, ``lockshop-init``, and hands down again, as container runtimes do.
    This machine mounts cgroup v1: the kernel's refusal is played by a stand-in, the
    hierarchy by a folder."""
    top = tmp_path / "cgroup"
    top.mkdir()
    (top / "cgroup.procs").write_text(f"{os.getpid()}\n")
    leaf = top / "lockshop-init" / "cgroup.procs"
    handed: list[Path] = []

    def hand_down(folder: Path) -> None:
        if folder == top and not leaf.exists():  # processes still in the top
            raise cgroups._explained(OSError(errno.EBUSY, "Device or resource busy"), top)
        handed.append(folder)

    monkeypatch.setattr(cgroups, "own_v2_group", lambda: "/")
    monkeypatch.setattr(cgroups, "_hand_down", hand_down)
    assert cgroups.V2(top).home() == top / "lockshop"
    assert leaf.read_text().split() == [str(os.getpid())]
    assert handed == [top, top / "lockshop"]
