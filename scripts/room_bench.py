#!/usr/bin/env python3
"""A room's worth of checks at once: thirty students submit exercise 3 within ten seconds.

Half submit a right lock (the skeleton filled in), half a broken one (a plain DEL: the
grader must name C11). Each goes through the room's own queue (``lockshop.room.queue``,
N gradings at once, on the room's SQLite store in a scratch folder) and is graded in the
sandbox (``grade_in_sandbox``), as ``lockshop up`` grades them. Every verdict must be
right and none lost; the figures are the time from the first submission to the last
verdict, each submission's time to its verdict (p50, p95, max), and what one grading used.

    scripts/room_bench.py                         30 students, N from the room's default
    scripts/room_bench.py --workers 2 --workers 3 one run per N
    scripts/room_bench.py --students 10 --within 5

A benchmark, not a test: it prints figures; it exits 1 only when a verdict was wrong or
lost. Run it as root (the sandbox's cgroups and its unprivileged user need it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from lockshop.room import sandbox  # noqa: E402
from lockshop.room.queue import GradingQueue, worker_count  # noqa: E402
from lockshop.room.sandboxed_grading import grade_in_sandbox  # noqa: E402
from lockshop.room.store import Store  # noqa: E402

RIGHT = (PROJECT / "tests" / "exercise_locks" / "token_lock.py").read_text()
BROKEN = RIGHT.replace(
    "        if not self.run(self.RELEASE, keys=[self.key], args=[self.token]):\n"
    "            raise LockLost(self.name, \"the lease expired\")",
    "        self.client.delete(self.key)  # a plain DEL: whoever holds it now")
assert BROKEN != RIGHT


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def one_room(students: int, within: float, workers: int) -> bool:
    """Run the room once; print its figures; True when every verdict was right."""
    usages: list[sandbox.Usage] = []

    def grade(*args, **kwargs):
        outcome = grade_in_sandbox(*args, **kwargs)
        if outcome.usage is not None:
            usages.append(outcome.usage)
        return outcome

    with tempfile.TemporaryDirectory(prefix="lockshop-room-bench-") as folder:
        store = Store(Path(folder))
        queue = GradingQueue(store, grade, workers)
        queue.start()
        try:
            people = [store.student(store.join(f"student {n + 1}")) for n in range(students)]
            submitted: dict[str, tuple[float, bool, object]] = {}
            started = time.monotonic()
            for n, student in enumerate(people):
                time.sleep(max(0.0, started + n * within / students - time.monotonic()))
                right = n % 2 == 0
                sid = queue.submit(student, "3", RIGHT if right else BROKEN, "en")
                submitted[sid] = (time.monotonic(), right, student)
            done: dict[str, tuple[float, dict]] = {}
            while len(done) < len(submitted):
                for sid, (_at, _right, student) in submitted.items():
                    if sid in done:
                        continue
                    seen = store.submission(sid, student)
                    if seen and seen["state"] in ("done", "failed"):
                        done[sid] = (time.monotonic(), seen)
                time.sleep(0.2)
        finally:
            queue.close(timeout=30)
            store.close()
    wrong = []
    for sid, (at, right, _student) in submitted.items():
        seen = done[sid][1]
        failed = [c["lesson"] for c in seen["checks"] if not c["passed"]]
        ok = (seen["passed"] is True) if right else \
            (seen["passed"] is False and failed[:1] == ["C11"])
        if not ok:
            wrong.append(f"  {sid} ({'right' if right else 'broken'} lock): {seen['state']}, "
                         f"passed={seen['passed']}, {seen['message']}")
    latencies = [done[sid][0] - at for sid, (at, _r, _s) in submitted.items()]
    last = max(finished for finished, _seen in done.values()) - started
    print(f"workers {workers}: {students} submissions in {within:g} s; last verdict after "
          f"{last:.1f} s; to each verdict p50 {percentile(latencies, 0.5):.1f} s, "
          f"p95 {percentile(latencies, 0.95):.1f} s, max {max(latencies):.1f} s; "
          f"right verdicts {students - len(wrong)} of {students}, lost "
          f"{students - len(done)}")
    if usages:
        peak = max(u.peak_memory_bytes or 0 for u in usages)
        tasks = max(u.peak_processes or 0 for u in usages)
        cpu = [u.cpu_seconds for u in usages if u.cpu_seconds is not None]
        walls = [u.wall_seconds for u in usages]
        print(f"  one grading: peak memory {peak / 2**20:.0f} MB at most, tasks {tasks} at "
              f"most, CPU {statistics.median(cpu):.1f} s median ({max(cpu):.1f} s max), wall "
              f"{statistics.median(walls):.1f} s median ({max(walls):.1f} s max)")
    for line in wrong:
        print(line)
    return not wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--within", type=float, default=10.0,
                        help="seconds over which the submissions arrive (default 10)")
    parser.add_argument("--workers", type=int, action="append",
                        help=f"gradings at once (repeat for several runs; default: the "
                             f"room's, {worker_count(None)} here)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("room_bench: run it as root (the sandbox's cgroups and user need it)")
        return 2
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start")
    right = True
    for workers in args.workers or [worker_count(None)]:
        right = one_room(args.students, args.within, workers) and right
    return 0 if right else 1


if __name__ == "__main__":
    sys.exit(main())
