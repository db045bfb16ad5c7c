"""The room wired into ``lockshop up``: its page and API at the room's address, the CLI's
self-reported results kept apart from what the room graded, the console's board showing
both apart with the instructor's buttons to free or remove a name, and a restart that
keeps it all."""

from __future__ import annotations

import os
import re
import shutil

import pytest
import requests

from helpers import chromium, lockshop_up, ports_for_up, require, wait_for
from lockshop.cluster.redis_servers import redis_server_binary
from lockshop.exercises import EXERCISES

pytestmark = [pytest.mark.cluster, pytest.mark.browser]

TOKEN = "room-wiring-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
#: A grading in the sandbox takes about 20 s on a quiet machine; two cores shared.
GRADING_S = 240


def started(text: str) -> dict:
    room = re.search(r"^room: (\S+) +\(code (\w+)\)", text, re.M)
    control = re.search(r"control \(labs, faults, sales\): (\S+)", text)
    console = re.search(r"console: (\S+)", text)
    assert room and control and console, text
    return {"room": room.group(1), "code": room.group(2), "control": control.group(1),
            "console": console.group(1)}


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    require(redis_server_binary() is not None, "redis-server is not installed")
    folder = tmp_path_factory.mktemp("room-wiring")
    with lockshop_up("--instances", "1", "--port", str(ports_for_up(1)), "--gradings", "1",
                     cwd=folder, env={**os.environ, "LOCKSHOP_ADMIN_TOKEN": TOKEN}) as text:
        yield started(text)


def join(up: dict, name: str) -> requests.Response:
    return requests.post(f"{up['room']}api/join", json={"code": up["code"], "name": name},
                         timeout=10)


def report(up: dict, name: str, **fields) -> requests.Response:
    """What ``exercise check --report`` posts."""
    result = {"name": name, "exercise": "3", "passed": True, "broken_lesson": None, "checks": [],
              **fields}
    return requests.post(f"{up['control']}/control/room/results", json=result, timeout=10,
                         headers={"X-Room-Code": up["code"]})


def test_the_room_s_page_and_api_answer_at_the_room_s_address(up):
    page = requests.get(up["room"], timeout=10)
    assert page.status_code == 200 and 'id="room"' in page.text
    exercises = requests.get(f"{up['room']}api/exercises", timeout=10).json()["exercises"]
    # Every exercise of the registry, in its order (22 since Quartz's lock row).
    assert [e["id"] for e in exercises] == list(EXERCISES) == [str(n) for n in range(1, 23)]


def test_a_room_with_writable_cgroups_opens_with_its_limits_and_shows_no_warning(up):
    """The other side of tests/test_room_limits.py: where the sandbox can write its
    cgroups, nothing is said against the room."""
    state = requests.get(f"{up['control']}/control/state", timeout=10).json()
    assert state["room_limits"]["unenforced"] == [], state["room_limits"]
    assert state["room_limits"]["cgroups"] in ("v1", "v2")
    with chromium() as browser:
        page, errors = open_console(browser, up)
        page.locator("#room-code:not(:empty)").wait_for()
        assert page.locator("#room-limits").is_hidden()
    assert errors == []


def test_a_reported_result_is_kept_as_self_reported(up):
    kept = report(up, "Hopper")
    assert kept.status_code == 201 and kept.json()["source"] == "self-reported"
    for board in (requests.get(f"{up['control']}/control/room", timeout=10).json(),
                  requests.get(f"{up['room']}api/board", timeout=10).json()):
        hoppers = [r for r in board["results"] if r["name"] == "Hopper"]
        assert [(r["exercise"], r["source"]) for r in hoppers] == [("3", "self-reported")]


def test_a_report_needs_the_room_s_own_code(up):
    refused = requests.post(f"{up['control']}/control/room/results", timeout=10,
                            json={"name": "Eve", "exercise": "3", "passed": True},
                            headers={"X-Room-Code": "WRONG2"})
    assert refused.status_code == 401 and "room code" in refused.json()["error"]
    board = requests.get(f"{up['room']}api/board", timeout=10).json()
    assert "Eve" not in board["students"]


def open_console(browser, up: dict):
    page = browser.new_page(viewport={"width": 1400, "height": 1000}, locale="en-US")
    page.set_default_timeout(60_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(up["console"])
    page.locator("#role:not(:empty)").wait_for()
    page.fill("#token", TOKEN)
    page.click("#token-form button")
    page.locator("body:not(.student)").wait_for(state="attached")
    return page, errors


def test_the_console_shows_a_self_reported_result_apart_and_not_as_passed(up):
    assert join(up, "Ada").status_code == 201
    assert report(up, "Ada").status_code == 201
    with chromium() as browser:
        page, errors = open_console(browser, up)
        cell = page.locator("#room-board tr[data-student='Ada'] td").nth(3)  # exercise 3
        cell.locator(".self-reported").wait_for()
        assert cell.locator(".self-reported").inner_text().startswith("self-reported: passed")
        assert cell.locator(".room-graded").count() == 0
        assert "ok" not in (cell.get_attribute("class") or "")  # the room graded nothing
        assert up["room"] in page.locator("#room-link").inner_text()
    assert errors == []


def test_the_instructor_frees_a_name_then_removes_it_from_the_console(up):
    assert join(up, "Li").status_code == 201
    assert join(up, "Li").status_code == 409  # the name is the first browser's
    assert report(up, "Li", passed=False, broken_lesson="C12").status_code == 201
    with chromium() as browser:
        page, errors = open_console(browser, up)
        row = page.locator("#room-board tr[data-student='Li']")
        row.locator("button", has_text="free this name").click()
        page.get_by_text("free the name Li: done").wait_for()
        assert join(up, "Li").status_code == 201  # a new browser may take it now
        page.on("dialog", lambda dialog: dialog.accept())
        row.locator("button", has_text="remove").click()
        row.wait_for(state="detached")
    board = requests.get(f"{up['room']}api/board", timeout=10).json()
    assert "Li" not in board["students"] and all(r["name"] != "Li" for r in board["results"])
    assert errors == []


def test_a_check_the_room_graded_is_shown_apart_from_the_self_reported(up, tmp_path):
    """The untouched skeleton of exercise 3, checked by the room in its sandbox: a ✗ with
    the lesson that broke, in the room's row of the cell; the student's own report
    beside it, apart."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    secret = join(up, "Grace").json()["student"]
    student = {"X-Student": secret}
    skeleton = requests.get(f"{up['room']}api/exercises/3/skeleton", timeout=10).text
    submitted = requests.post(f"{up['room']}api/submissions", headers=student, timeout=10,
                              json={"exercise": "3", "source": skeleton})
    assert submitted.status_code == 202, submitted.text
    done = wait_for(lambda: (seen := requests.get(
        f"{up['room']}api/submissions/{submitted.json()['id']}", headers=student,
        timeout=10).json())["state"] in ("done", "failed") and seen,
        timeout=GRADING_S, interval=1.0, message="the room to grade the skeleton")
    assert done["state"] == "done" and done["passed"] is False, done
    assert report(up, "Grace").status_code == 201  # and she says she passed at home
    with chromium() as browser:
        page, errors = open_console(browser, up)
        cell = page.locator("#room-board tr[data-student='Grace'] td").nth(3)
        cell.locator(".room-graded").wait_for()
        assert cell.get_attribute("class") == "bad"
        assert re.match(r"C\d\d ", cell.locator(".room-graded").inner_text())
        assert cell.locator(".self-reported").inner_text().startswith("self-reported: passed")
        page.locator("#exercises").screenshot(path=tmp_path / "console-room-board.png")
        print(f"screenshot: {tmp_path / 'console-room-board.png'}")
    assert errors == []


def test_a_restart_keeps_the_code_the_names_and_the_board(tmp_path):
    require(redis_server_binary() is not None, "redis-server is not installed")
    control_port = ports_for_up(1)

    def up_again():
        return lockshop_up("--instances", "1", "--port", str(ports_for_up(1)),
                           "--control-port", str(control_port), cwd=tmp_path)

    with up_again() as text:
        first = started(text)
        secret = join(first, "Turing").json()["student"]
        assert report(first, "Turing").status_code == 201
    with up_again() as text:
        again = started(text)
        assert (again["room"], again["code"]) == (first["room"], first["code"])
        me = requests.get(f"{again['room']}api/me", headers={"X-Student": secret}, timeout=10)
        assert me.status_code == 200 and me.json()["name"] == "Turing"
        board = requests.get(f"{again['room']}api/board", timeout=10).json()
        assert [(r["name"], r["source"]) for r in board["results"]] == [
            ("Turing", "self-reported")]
