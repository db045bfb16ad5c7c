"""Run a locustfile headless, bounded in users and time, and read its figures.

Locust runs as a subprocess: it monkey-patches the standard library with
gevent, which must never happen inside the process that calls us.
"""

from __future__ import annotations

import csv
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from loadtest import locustfile_path


#: How long after the sale should have closed Locust stops anyway, if the doors never
#: opened (a buyer that could not be spawned).
DOORS_GRACE_S = 30


@dataclass(frozen=True)
class LocustResult:
    exit_code: int
    requests: int
    failures: int
    requests_per_second: float
    p50_ms: float
    p95_ms: float
    csv_prefix: Path
    output: str


def run_locust(targets: list[str], *, locustfile: str = "flash_sale", users: int = 20,
               run_time_s: int = 10, csv_prefix: Path, admin_token: str = "",
               workers: int = 0, extra_args: tuple[str, ...] = (),
               timeout_s: float | None = None) -> LocustResult:
    """Run Locust headless against ``targets`` and return its aggregated figures.

    With ``workers``, Locust runs distributed: this master and that many
    worker processes on this machine; the master alone reads the audit.
    """
    locust = [sys.executable, "-m", "locust", "-f", str(locustfile_path(locustfile)),
              "--loglevel", "WARNING"]
    # The sale is open for run_time_s once every buyer is in (loadtest/shop_user.py):
    # on a busy machine, spawning alone can take a short run's whole --run-time, and a
    # run without orders shows no race. --run-time stays, later, in case the doors never
    # open.
    command = [
        *locust, "--headless", "--users", str(users), "--spawn-rate", str(users),
        "--open-for", str(run_time_s), "--run-time", f"{run_time_s + DOORS_GRACE_S}s",
        "--stop-timeout", "5", "--host", targets[0], "--targets", ",".join(targets),
        "--csv", str(csv_prefix), "--only-summary", *extra_args,
    ]
    if admin_token:
        command += ["--admin-token", admin_token]
    timeout = timeout_s or run_time_s + DOORS_GRACE_S + 60
    if not workers:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        output, code = done.stdout + done.stderr, done.returncode
    else:
        output, code = _run_distributed(command, locust, workers, targets, timeout)
    stats = _aggregated_row(Path(f"{csv_prefix}_stats.csv"))
    return LocustResult(
        exit_code=code,
        requests=int(stats.get("Request Count", 0)),
        failures=int(stats.get("Failure Count", 0)),
        requests_per_second=_figure(stats.get("Requests/s")),
        p50_ms=_figure(stats.get("50%")),
        p95_ms=_figure(stats.get("95%")),
        csv_prefix=csv_prefix,
        output=output,
    )


def _run_distributed(master_command: list[str], locust: list[str], workers: int,
                     targets: list[str], timeout: float) -> tuple[str, int]:
    port = _free_port()
    master = subprocess.Popen(
        [*master_command, "--master", "--master-bind-host", "127.0.0.1",
         "--master-bind-port", str(port), "--expect-workers", str(workers),
         "--expect-workers-max-wait", "30"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    worker_processes = [
        subprocess.Popen([*locust, "--worker", "--master-host", "127.0.0.1",
                          "--master-port", str(port), "--targets", ",".join(targets)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(workers)]
    try:
        output, _ = master.communicate(timeout=timeout)
        return output, master.returncode
    finally:
        for worker in worker_processes:
            try:
                worker.wait(timeout=15)  # workers quit when the master tells them to
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        if master.poll() is None:
            master.kill()
            master.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _figure(text: str | None) -> float:
    """A figure of Locust's CSV; 0 where it has none (a percentile of no request is
    "N/A")."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def _aggregated_row(path: Path) -> dict:
    if not path.is_file():
        return {}
    with path.open(newline="") as stats:
        for row in csv.DictReader(stats):
            if row.get("Name") == "Aggregated":
                return row
    return {}


def latest_history_row(csv_prefix: Path) -> dict:
    """The newest "Aggregated" row of a running Locust's stats history (one a second):
    its own figures, read while it runs. Empty until the first one is written."""
    path = Path(f"{csv_prefix}_stats_history.csv")
    if not path.is_file():
        return {}
    with path.open(newline="") as history:
        rows = [row for row in csv.DictReader(history) if row.get("Name") == "Aggregated"]
    return rows[-1] if rows else {}
