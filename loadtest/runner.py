"""Run a locustfile headless, bounded in users and time, and read its figures.

Locust runs as a subprocess: it monkey-patches the standard library with
gevent, which must never happen inside the process that calls us.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import locustfile_path


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
               extra_args: tuple[str, ...] = (), timeout_s: float | None = None) -> LocustResult:
    """Run Locust headless against ``targets`` and return its aggregated figures."""
    command = [
        sys.executable, "-m", "locust", "-f", str(locustfile_path(locustfile)),
        "--headless", "--users", str(users), "--spawn-rate", str(users),
        "--run-time", f"{run_time_s}s", "--stop-timeout", "5",
        "--host", targets[0], "--targets", ",".join(targets),
        "--csv", str(csv_prefix), "--only-summary", "--loglevel", "WARNING",
        *extra_args,
    ]
    if admin_token:
        command += ["--admin-token", admin_token]
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=timeout_s or run_time_s + 60)
    stats = _aggregated_row(Path(f"{csv_prefix}_stats.csv"))
    return LocustResult(
        exit_code=done.returncode,
        requests=int(stats.get("Request Count", 0)),
        failures=int(stats.get("Failure Count", 0)),
        requests_per_second=float(stats.get("Requests/s", 0.0)),
        p50_ms=float(stats.get("50%", 0.0) or 0.0),
        p95_ms=float(stats.get("95%", 0.0) or 0.0),
        csv_prefix=csv_prefix,
        output=done.stdout + done.stderr,
    )


def _aggregated_row(path: Path) -> dict:
    if not path.is_file():
        return {}
    with path.open(newline="") as stats:
        for row in csv.DictReader(stats):
            if row.get("Name") == "Aggregated":
                return row
    return {}
