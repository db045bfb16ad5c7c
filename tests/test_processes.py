"""Child processes: a pause is complete when ``pause()`` returns; a port is handed out
once until its server had time to bind it."""

from __future__ import annotations

import sys
from pathlib import Path

from helpers import wait_for
from lockshop.cluster.processes import LISTENING_PORTS, ServerProcess, free_port, spawn

BUSY_THREADS = 8
#: A process whose threads never block: each must be stopped by the signal itself, on
#: whichever core it runs, which is where a pause that returns early shows.
BUSY = ("import threading, time\n"
        f"for _ in range({BUSY_THREADS}):\n"
        "    threading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()\n"
        "print('busy', flush=True)\n"
        "time.sleep(600)\n")


class BusyServer(ServerProcess):
    def __init__(self, folder: Path) -> None:
        self.log = folder / "busy.log"

    def start(self) -> BusyServer:
        self.process = spawn([sys.executable, "-c", BUSY], env={}, log_path=self.log)
        return self


def thread_states(pid: int) -> list[str]:
    return [stat.read_text().rsplit(")", 1)[1].split()[0]
            for stat in Path(f"/proc/{pid}/task").glob("*/stat")]


def test_every_thread_is_stopped_when_pause_returns(tmp_path):
    with BusyServer(tmp_path) as server:
        wait_for(lambda: len(thread_states(server.process.pid)) > BUSY_THREADS)
        for _ in range(20):
            server.pause()
            states = thread_states(server.process.pid)
            assert set(states) <= {"T", "t"}, f"threads still running after pause(): {states}"
            server.resume()


def test_ports_asked_for_before_anything_binds_them_are_all_different():
    # 500 picks among ~12,800 ports share one 99.99 % of the time unless the
    # ones already given are skipped: an ensemble asks for nine before it starts one.
    ports = [free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)
    assert all(port in LISTENING_PORTS for port in ports)
