"""A grade's record (``lockshop.exercises.results``): written by a grading that runs apart
from its reader (the room's, in a sandbox), read back as untrusted text, and printed by
the command line's own printer to the same lines; what is not a record is no check."""

from __future__ import annotations

import json

import pytest

from lockshop.exercises.results import CheckResult, Grade, read_checks

MAX = 4000


def diagnosed() -> CheckResult:
    """A ✗ whose cause the grader found: the cause's lesson, not the check's, is to study."""
    return CheckResult("C09", "a holder is killed", "the next owner gets it", "waited 2.8 s",
                       False, "give lease_ms to PX", ("A2",), "a crashed holder", 2.81,
                       cause="C36", diagnosis="your lease is in the wrong unit",
                       cause_title="the lease's unit", cause_articles=("A2", "A3"),
                       status="failed")


def aside() -> CheckResult:
    """A check whose lesson does not apply: neither ✓ nor ✗."""
    return CheckResult("C37", "A's release is paused", "EXEC refused", "one script", False,
                       "lesson C12 is the one it breaks", ("A2",), "WATCH", 0.08,
                       applies=False, status="not applicable")


def passed() -> CheckResult:
    return CheckResult("C01", "6 threads", "24", "24", True, "lock it", ("A0",), "mutual",
                       0.6, status="passed")


def through_json(record: dict) -> dict:
    return json.loads(json.dumps(record, ensure_ascii=False))


@pytest.mark.parametrize("check", [diagnosed(), aside(), passed()],
                         ids=["diagnosed", "does-not-apply", "passed"])
def test_a_check_read_back_prints_the_command_line_s_lines(check):
    read = CheckResult.from_record(through_json(check.record()), max_text=MAX)
    assert read == check
    assert read.lines() == check.lines()


def test_a_round_read_back_says_the_command_line_s_verdict():
    graded = Grade("3", "x.py:X", [passed(), diagnosed(), aside()], 31.4,
                   [(12, "TODO 3: run RELEASE")])
    record = through_json(graded.verdict_record())
    checks = read_checks([through_json(c.record()) for c in graded.results], max_text=MAX)
    again = Grade.from_records("3", checks, record["verdict"], max_text=MAX)
    assert again is not None and again.verdict_line() == graded.verdict_line()
    assert "first broken lesson C36" in again.verdict_line()
    assert "1 does not apply" in again.verdict_line()
    assert again.broken_lesson == "C36" and again.first_failed.lesson == "C09"


def test_a_check_that_does_not_apply_passes_the_round_it_is_in():
    """The room once read every check that did not pass as failed: "first broken C37"."""
    checks = read_checks([through_json(c.record()) for c in (passed(), aside())],
                         max_text=MAX)
    graded = Grade("9", "", checks)
    assert graded.passed and graded.broken_lesson is None
    assert checks[1].mark == "–" and checks[1].status == "not applicable"


@pytest.mark.parametrize("change", [
    {"lesson": "C9"}, {"lesson": "<b>"}, {"passed": "yes"}, {"applies": 0},
    {"cause": "C3x"}, {"articles": ["<img>"]}, {"articles": ["A1"] * 11},
    {"seconds": -1}, {"seconds": True}, {"todo": 3}, {"hint": None}, {"verdict": {}},
    {"forged": True},
], ids=lambda change: ",".join(change))
def test_what_is_not_a_check_s_record_is_no_check(change):
    record = {**diagnosed().record(), **change}
    assert CheckResult.from_record(record, max_text=MAX) is None


def test_a_field_left_out_claims_least_and_texts_are_cut():
    read = CheckResult.from_record({"lesson": "C11", "passed": False, "hint": "x" * 10},
                                   max_text=4)
    assert read.applies and read.cause is None and read.failed and read.hint == "xxxx"


@pytest.mark.parametrize("change", [
    {"passed": True},  # says passed over a ✗
    {"broken_lesson": "C09"},  # names the symptom, not the cause the checks name
    {"rounds_total": 2}, {"rounds_passed": 1}, {"seconds": "1"},
    {"todos": [["12", "TODO"]]}, {"extra": 1},
], ids=lambda change: ",".join(change))
def test_a_verdict_that_is_not_its_checks_is_no_verdict(change):
    graded = Grade("3", "", [passed(), diagnosed()], 1.0)
    verdict = {**graded.verdict_record()["verdict"], **change}
    assert Grade.from_records("3", graded.results, verdict, max_text=MAX) is None
