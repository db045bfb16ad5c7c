"""``lockshop sandbox check-v2`` says BROKEN only when a hostile grading's test failed in
the VM: a pytest that ran no test, or a console where the kernel's lines run into PID 1's,
is NOT CHECKED (exit 2), never a limit that did not hold. The VM itself is stood in for:
booting one takes most of an hour (``docs/guide/room.md``); this is what the host makes of
what it prints."""

from __future__ import annotations

import io
import time

import pytest

from lockshop.room import check_v2

PASSED = "PASSED tests/test_sandbox.py::test_a_limit_stops_the_whole_grading_and_names_itself[fork]"
FAILED = "FAILED tests/test_sandbox.py::test_a_limit_stops_the_whole_grading_and_names_itself[memory]"


def checked(monkeypatch, exit_status: int, lines: list[str]) -> tuple[int, str]:
    """``main``'s exit and what it printed, for a VM whose pytest ended so."""
    monkeypatch.setattr(check_v2, "ensure_tools", lambda say: None)
    monkeypatch.setattr(check_v2, "build_root", lambda cache, say: cache)
    monkeypatch.setattr(check_v2, "boot_and_test", lambda root, say: (exit_status, lines))
    out = io.StringIO()
    return check_v2.main(cache=None, out=out), out.getvalue()


@pytest.mark.parametrize("exit_status, lines, verdict", [
    (0, [PASSED], 0),
    (1, [PASSED, FAILED], 1),
    (5, ["collected 0 items"], 2),     # no test collected
    (1, ["ImportError while loading conftest"], 2),  # no test ended
    (3, [PASSED], 2),                 # pytest's own error, after a pass
], ids=["held", "broken", "none-collected", "none-ended", "internal-error"])
def test_only_a_failed_test_is_broken(monkeypatch, exit_status, lines, verdict):
    said = checked(monkeypatch, exit_status, lines)
    assert said[0] == verdict, said[1]
    word = {0: "VERDICT: HELD", 1: "VERDICT: BROKEN", 2: "VERDICT: NOT CHECKED"}[verdict]
    assert word in said[1], said[1]


class Console:
    """qemu as ``boot_and_test`` starts it, printing ``lines`` on its serial console."""

    def __init__(self, lines: list[str]) -> None:
        self.stdout = iter(f"{line}\n".encode() for line in lines)
        self.returncode = 0

    def wait(self) -> int:
        return 0

    def poll(self) -> int:
        return 0

    def kill(self) -> None:
        pass


def booted(monkeypatch, tmp_path, lines: list[str]) -> int:
    root = tmp_path / "root"
    (root / "boot").mkdir(parents=True, exist_ok=True)
    (root / "boot" / "vmlinuz-6.1.0-test").write_text("")
    monkeypatch.setattr(check_v2.subprocess, "Popen", lambda *args, **kwargs: Console(lines))
    exit_status, _lines = check_v2.boot_and_test(
        root, check_v2._Say(io.StringIO(), time.monotonic()))
    return exit_status


def test_the_kernel_s_lines_on_the_exit_line_do_not_break_the_reading(monkeypatch, tmp_path):
    assert booted(monkeypatch, tmp_path, [
        PASSED, "lockshop-check-v2: tests exit 0[   93.012345] random: crng init done"]) == 0
    assert booted(monkeypatch, tmp_path, [
        "[   93.012345] virtio_net: lockshop-check-v2: tests exit 1"]) == 1


def test_an_exit_line_cut_by_the_kernel_is_not_an_exit_status(monkeypatch, tmp_path):
    with pytest.raises(check_v2.CheckError, match="before its tests said how they ended"):
        booted(monkeypatch, tmp_path, ["lockshop-check-v2: tests exit [   93.01] random: x",
                                       "0"])
