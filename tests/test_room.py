"""The room board, on a real ``lockshop up``: students' results posted with the room code,
refused without it or malformed, and shown in Chromium as text, never as HTML."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from helpers import chromium, lockshop_up, ports_for_up, require
from lockshop.cluster.redis_servers import redis_server_binary

pytestmark = pytest.mark.cluster

TOKEN = "room-test-token"
XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    require(redis_server_binary() is not None, "redis-server is not installed")
    folder = tmp_path_factory.mktemp("room")
    with lockshop_up("--instances", "1", "--port", str(ports_for_up(1)), cwd=folder,
                     env={**os.environ, "LOCKSHOP_ADMIN_TOKEN": TOKEN}) as text:
        code = re.search(r"room code (\w+):", text)
        control = re.search(r"control \(labs, faults, sales\): (\S+)", text)
        console = re.search(r"console: (\S+)", text)
        assert code and control and console, text
        yield {"code": code.group(1), "control": control.group(1),
               "console": console.group(1)}


def result(name: str = "Ada", **fields) -> dict:
    return {"name": name, "exercise": "3", "passed": False, "broken_lesson": "C12",
            "checks": [{"lesson": "C11", "action": "a late release", "passed": True},
                       {"lesson": "C12", "action": "a paused release", "passed": False}],
            **fields}


def post(room, body, code: str | None = "") -> requests.Response:
    headers = {"Content-Type": "application/json"}
    if code is not None:
        headers["X-Room-Code"] = code or room["code"]
    data = body if isinstance(body, bytes) else json.dumps(body)
    return requests.post(room["control"] + "/control/room/results", data=data, headers=headers,
                         timeout=10)


def board(room) -> dict:
    return requests.get(room["control"] + "/control/room", timeout=10).json()


def test_a_result_without_the_room_code_is_401_and_kept_nowhere(room):
    before = board(room)
    assert post(room, result("Eve"), code=None).status_code == 401
    assert post(room, result("Eve"), code="WRONG1").status_code == 401
    assert board(room) == before


# The room's one rule for a self-reported result (lockshop.room.self_reported): a name and
# an exercise are refused as joining and submitting refuse them (422), the verdict's
# fields as malformed (400), a body past the door's cap before it is read (413).
@pytest.mark.parametrize("body, status", [
    (b"{not json", 400),
    (b"[1, 2]", 400),
    (json.dumps(result(name="")).encode(), 422),
    (json.dumps(result(name="Li\u200b")).encode(), 422),
    (json.dumps(result(name="x" * 20_000)).encode(), 422),  # a name past 32 characters
    (json.dumps(result(exercise="99")).encode(), 422),
    (json.dumps(result(passed="yes")).encode(), 400),
    (json.dumps(result(broken_lesson="<b>")).encode(), 400),
    (json.dumps(result(lesson="C12")).encode(), 400),  # a field the post does not have
    (json.dumps(result(checks=[{"lesson": "C11"}])).encode(), 400),
    (json.dumps(result(checks=[{"lesson": "C11", "action": "x" * 40_000,
                                "passed": True}] * 2)).encode(), 413),  # over 64 KiB
], ids=["not-json", "not-an-object", "no-name", "hidden-character", "long-name",
        "no-such-exercise", "passed-not-bool", "bad-lesson", "unknown-field", "bad-check",
        "oversized"])
def test_a_malformed_or_oversized_result_is_refused_and_kept_nowhere(room, body, status):
    before = board(room)
    answer = post(room, body)
    assert answer.status_code == status and answer.json()["error"], answer.text
    assert board(room) == before


def test_the_grader_posts_to_the_board(room, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "lockshop.cli", "exercise", "check", "1",
         "locks.redis_broken:SetnxNoExpiryLock", "--report", room["control"], "--room",
         room["code"], "--name", "Grace"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "posted to the room board" in done.stdout
    kept = [r for r in board(room)["results"] if r["name"] == "Grace"]
    assert len(kept) == 1 and kept[0]["exercise"] == "1" and kept[0]["passed"] is True
    wrong = subprocess.run(
        [sys.executable, "-m", "lockshop.cli", "exercise", "check", "1",
         "locks.redis_broken:SetnxNoExpiryLock", "--report", room["control"], "--room",
         "NOPE", "--name", "Mallory"], capture_output=True, text=True, timeout=300)
    assert wrong.returncode == 2 and "room code" in wrong.stderr


def test_the_console_shows_the_board_as_text(room):
    assert post(room, result(XSS)).status_code == 201
    passed = result("Ada", exercise="2", passed=True, broken_lesson=None)
    assert post(room, passed).status_code == 201
    with chromium() as browser:
        page = browser.new_page(locale="en-US")
        dialogs, errors = [], []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(room["console"])
        page.wait_for_selector("#exercise-list li[data-exercise='8']")
        row = page.locator("#room-board tr", has_text=XSS)
        row.wait_for()
        assert row.locator("td").first.text_content() == XSS  # the characters, not an image
        assert page.locator("#room-board img").count() == 0
        assert "C12" in row.text_content()
        ada = page.locator("#room-board tr[data-student='Ada']")
        assert "passed" in ada.text_content()
        assert room["code"] in page.locator("#room-code").text_content()
        page.screenshot(path=str(Path(os.environ.get("TMPDIR", "/tmp")) / "room-board.png"),
                        full_page=True)
    assert dialogs == [] and errors == []


def test_the_console_links_to_the_handbook_which_up_serves(room):
    page = requests.get(room["console"], timeout=10).text
    link = re.search(r'id="handbook-link"|href="([^"]+/handbook/)"', page)
    assert link and f'{room["control"]}/handbook/' in page
    answer = requests.get(room["control"] + "/handbook/", timeout=120)
    assert answer.status_code == 200 and "lockshop" in answer.text
    lesson = requests.get(room["control"] + "/handbook/zh/", timeout=30)
    assert lesson.status_code == 200 and "锁" in lesson.text
