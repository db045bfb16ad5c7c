"""lockshop report: a short run writes every file, and its table agrees with the audit."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from locks import Backends
from lockshop.workshop.report import _why
from lockshop.workshop.runs import FLASH_SALE, PlannedRun, RunResult
from shop.orders.order_strategies import Strategies
from shop.store.audit import take_audit
from shop.store.db import make_engine, make_sessions

pytestmark = [pytest.mark.cluster, pytest.mark.locust]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report") / "out"
    done = subprocess.run(
        [sys.executable, "-m", "lockshop.cli", "report", "--output", str(folder),
         "--strategies", "none,atomic", "--instances", "2", "--users", "8", "--run-time", "2"],
        capture_output=True, text=True, timeout=300, cwd=folder.parent)
    return folder, done


def what_each_run_did(folder) -> str:
    """For a failed assertion: each row's verdict and figures, and why."""
    rows = json.loads((folder / "results.json").read_text())["rows"]
    return "\n".join(f"{r['scenario']} {r['strategy']}: orders {r['orders']}, lost updates "
                     f"{r['lost_updates']}, failed requests {r['failed_requests']}: {r['why']}"
                     for r in rows)


def test_it_writes_every_file(report):
    folder, done = report
    # none WRONG and atomic correct, as expected
    assert done.returncode == 0, done.stderr + what_each_run_did(folder)
    assert "[4/4] Seat sale: atomic on 2 instance(s)" in done.stderr  # the progress line
    for name in ("report.md", "report.html", "results.json"):
        assert (folder / name).stat().st_size > 0
    for chart in ("oversold.png", "throughput.png"):
        assert (folder / "charts" / chart).read_bytes()[:8] == PNG_MAGIC
    for scenario in ("flash_sale", "seat_sale"):
        for run in ("01-none-2", "02-atomic-2"):
            run_folder = folder / "runs" / scenario / run
            assert "<html" in (run_folder / "locust.html").read_text()
            assert (run_folder / "locust_stats.csv").read_text().startswith("Type,Name")


def test_each_row_says_what_happened_and_why(report):
    folder, _ = report
    rows = json.loads((folder / "results.json").read_text())["rows"]
    by_run = {(r["scenario"], r["strategy"]): r for r in rows}
    none = by_run[("flash_sale", "none")]
    assert none["correct"] is False and none["lost_updates"] > 0, what_each_run_did(folder)
    assert none["why"].startswith("Wrong:") and "Why:" in none["why"]
    atomic = by_run[("seat_sale", "atomic")]
    assert atomic["correct"] is True and atomic["why"].startswith("Correct:")
    for r in rows:  # the audit's own arithmetic holds in every row
        assert r["lost_updates"] == r["sold"] - (r["initial"] - r["remaining"])
        # Oversold is summed per product: one product can be oversold while the
        # totals are not, so the sum is at least the totals' difference.
        assert r["oversold"] >= max(0, r["sold"] - r["initial"])
    html = (folder / "report.html").read_text()
    markdown = (folder / "report.md").read_text()
    for r in rows:
        assert r["why"] in markdown
        assert r["locust_html"] in html


def test_the_table_agrees_with_the_audit(report):
    folder, _ = report
    last = json.loads((folder / "results.json").read_text())["rows"][-1]
    # The last run's database is still there: audit it independently.
    engine = make_engine(f"sqlite:///{folder / 'runtime' / 'shop.db'}")
    audit = take_audit(make_sessions(engine)).as_dict()["totals"]
    engine.dispose()
    for key in ("sold", "remaining", "oversold", "lost_updates", "double_booked_seats",
                "retries", "stale_writes_rejected"):
        assert last[key] == audit[key], key
    # The last run is the seat sale's atomic row: the last such line of the table.
    table_row = [line for line in (folder / "report.md").read_text().splitlines()
                 if line.startswith("| atomic | 2 |")][-1]
    cells = [c.strip() for c in table_row.strip("|").split("|")]
    assert cells[3:7] == [str(last[k]) for k in ("oversold", "lost_updates",
                                                 "double_booked_seats",
                                                 "stale_writes_rejected")]
    assert cells[7] == f"{last['overlaps']} ({last['overlaps_both_wrote']})"  # none: no lock
    assert cells[8] == str(last["retries"])
    assert float(cells[9]) == last["orders_per_s"]


def test_a_run_that_placed_no_order_is_not_called_correct():
    """An empty sale's audit is correct: the row must say there was nothing to judge, and
    the report count it as a surprise, whatever the strategy was expected to do (the
    clean-clone CI run once had a two-second run place nothing, and saw none "correct")."""
    strategy = Strategies(Backends(), "sqlite").get("atomic")
    totals = {"initial": 30, "sold": 0, "remaining": 30, "orders": 0, "oversold": 0,
              "lost_updates": 0, "double_booked_seats": 0, "retries": 0,
              "stale_writes_rejected": 0}
    empty = RunResult(FLASH_SALE, PlannedRun(strategy, 2), {"correct": True, "totals": totals},
                      locust=None, lock={}, overlaps={"both_wrote": 0})
    assert empty.correct and not empty.sold_anything and not empty.as_expected
    assert _why(empty).startswith("Nothing to judge")
    placed = replace(empty, audit={"correct": True, "totals": {**totals, "orders": 1,
                                                                "sold": 1, "remaining": 29}})
    assert placed.as_expected and _why(placed).startswith("Correct:")
