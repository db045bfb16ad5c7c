"""The room's HTTP API on a bare Flask app with its blueprint, its store a real SQLite file in
tmp_path: joining, names taken and refused, the caps at the door, one student's work
hidden from another, the instructor's actions, the board's size, self-reported apart."""

from __future__ import annotations

import gzip
import http.client
import json
import stat
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from flask import Flask
from werkzeug.serving import make_server

from helpers import wait_for
from lockshop.exercises import EXERCISES
from lockshop.exercises.skeleton_text import skeleton_text
from lockshop.room import Room
from lockshop.room.api import JOIN_BYTES, SOURCE_BODY_BYTES, serve
from lockshop.room.names import MAX_CHARS
from lockshop.front_door import ADMIN_TOKEN, Refused
from lockshop.room.store import MAX_NAMES, MAX_SOURCE_BYTES
from shop.i18n.web import init_app

TOKEN = "room-admin-token"


class HeldGrading:
    """A grading that waits until the test lets it finish, then fails lesson C11: what the
    API shows of a check in line, running and done is forced, not timed."""

    def __init__(self) -> None:
        self.go = threading.Event()

    def __call__(self, exercise: str, source: str, language: str, *, on_check):
        check = {"lesson": "C11", "passed": False, "action": "release late",
                 "expected": "refused", "observed": "deleted", "hint": "compare the token",
                 "lesson_title": "a late release"}
        on_check(check)
        assert self.go.wait(30), "the test never let the grading finish"
        return SimpleNamespace(passed=False, checks=[check], message="1 of 1 failed")


@pytest.fixture()
def grading():
    held = HeldGrading()
    yield held
    held.go.set()  # whatever the test did, no grading is left waiting


@pytest.fixture()
def room(tmp_path, grading):
    opened = Room.open(tmp_path / "room", workers=1, grade=grading)
    yield opened
    grading.go.set()
    opened.close()


def room_app(room, token: str | None = TOKEN) -> Flask:
    """A bare app, its admin token set by its maker, and the room's API on it."""
    app = Flask(__name__)
    init_app(app)
    app.extensions[ADMIN_TOKEN] = token
    serve(app, room)
    return app


@pytest.fixture()
def client(room):
    return room_app(room).test_client()


def join(client, room, name: str) -> str:
    answer = client.post("/room/api/join", json={"code": room.code, "name": name})
    assert answer.status_code == 201, answer.json
    return answer.json["student"]


def as_student(secret: str) -> dict:
    return {"X-Student": secret}


def refused(answer, status: int, words: str) -> None:
    assert answer.status_code == status, answer.data
    assert set(answer.json) == {"error", "message"}
    assert words in answer.json["error"], answer.json


# --- joining ----------------------------------------------------------------------------

def test_joining_gives_a_secret_and_the_name_as_kept(client, room):
    answer = client.post("/room/api/join", json={"code": room.code.lower(), "name": " Ｌｉ "})
    assert answer.status_code == 201
    assert answer.json["name"] == "Li"
    secret = answer.json["student"]
    assert len(secret) >= 40
    assert client.get("/room/api/me", headers=as_student(secret)).json == {"name": "Li"}
    assert room.board()["students"] == ["Li"]
    # The room keeps a hash of the secret, never the secret.
    assert secret.encode() not in (room.store.path).read_bytes()


def test_a_wrong_code_is_401_and_joins_nobody(client, room):
    refused(client.post("/room/api/join", json={"code": "WRONG2", "name": "Ada"}), 401,
            "not this room's code")
    refused(client.post("/room/api/join", json={"name": "Ada"}), 401, "not this room's code")
    assert room.board()["students"] == []


def test_a_taken_name_is_409_in_any_case_and_width(client, room):
    join(client, room, "Li")
    for same in ("Li", "li", "LI", "Ｌｉ", " li "):
        refused(client.post("/room/api/join", json={"code": room.code, "name": same}), 409,
                "is taken")
    assert room.board()["students"] == ["Li"]


def test_a_name_with_a_hidden_character_is_422_not_a_second_name(client, room):
    join(client, room, "Li")
    for hidden, words in (("Li\u200b", "invisible"), ("\u202eiL", "direction mark"),
                          ("Li\x00", "control character"), ("", "type a name")):
        refused(client.post("/room/api/join", json={"code": room.code, "name": hidden}), 422,
                words)
    assert room.board()["students"] == ["Li"]


def test_the_room_takes_at_most_200_names(client, room):
    for number in range(MAX_NAMES):
        room.store.join(f"student {number}")
    refused(client.post("/room/api/join", json={"code": room.code, "name": "one more"}), 403,
            "the room is full")
    assert len(room.board()["students"]) == MAX_NAMES


@pytest.mark.parametrize("body", [b"", b"not json", b"[1, 2]", b'"Ada"', b"\xff\xfe"])
def test_a_join_that_is_not_a_json_object_is_400(client, room, body):
    refused(client.post("/room/api/join", data=body, content_type="application/json"), 400,
            "send a JSON object")


def test_a_refusal_is_said_in_the_request_s_language_with_a_stable_english_error(client, room):
    answer = client.post("/room/api/join", data=b"[]", content_type="application/json",
                         headers={"Accept-Language": "zh-CN"})
    assert answer.status_code == 400
    assert answer.json["error"] == "send a JSON object"
    assert answer.json["message"] != answer.json["error"]  # the catalog's Chinese


# --- the caps at the door ----------------------------------------------------------------

def test_a_body_past_its_cap_is_413_before_it_is_read(client, room):
    refused(client.post("/room/api/join", data=b"x" * (JOIN_BYTES + 1),
                        content_type="application/json"), 413, "at most 4 KB")
    secret = join(client, room, "Ada")
    refused(client.post("/room/api/submissions", data=b"x" * (SOURCE_BODY_BYTES + 1),
                        content_type="application/json", headers=as_student(secret)), 413,
            "a request to the room is at most")


def test_a_source_past_64_kb_is_413_and_kept_nowhere(client, room):
    secret = join(client, room, "Ada")
    fits = "#" * MAX_SOURCE_BYTES
    too_long = "李" * (MAX_SOURCE_BYTES // 3 + 1)  # three bytes each: one past the cap
    answer = client.put("/room/api/sources/3", json={"source": fits}, headers=as_student(secret))
    assert answer.status_code == 200, answer.json
    refused(client.put("/room/api/sources/3", json={"source": too_long},
                       headers=as_student(secret)), 413, "at most 64 KB")
    refused(client.post("/room/api/submissions", json={"exercise": "3", "source": too_long},
                        headers=as_student(secret)), 413, "at most 64 KB")
    kept = client.get("/room/api/sources/3", headers=as_student(secret)).json
    assert kept["source"] == fits


def test_a_chunked_body_is_counted_as_it_comes_on_a_real_server(room):
    """No Content-Length to refuse by: the cap holds while the body is read, and the
    request is refused without the rest of it."""
    app = room_app(room)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=30)

        def chunks():
            yield b'{"code": "'
            for _ in range(1024):  # 64 MB in all, if it were all read
                yield b"A" * (64 * 1024)

        connection.request("POST", "/room/api/join", body=chunks(),
                           headers={"Content-Type": "application/json"},
                           encode_chunked=True)
        answer = connection.getresponse()
        assert answer.status == 413
        assert "at most 4 KB" in json.loads(answer.read())["error"]
        connection.close()
    except (BrokenPipeError, ConnectionResetError):
        pytest.fail("the server hung up instead of answering 413")
    finally:
        server.shutdown()
        server.server_close()
    assert room.board()["students"] == []


# --- one student's work is theirs --------------------------------------------------------

def test_a_source_is_kept_for_its_student_across_browsers(client, room):
    secret = join(client, room, "Ada")
    empty = client.get("/room/api/sources/3", headers=as_student(secret)).json
    assert empty == {"exercise": "3", "source": None, "saved_at": None}
    client.put("/room/api/sources/3", json={"source": "print('mine')"},
               headers=as_student(secret))
    assert client.get("/room/api/sources/3",
                      headers=as_student(secret)).json["source"] == "print('mine')"
    other = join(client, room, "Bob")
    assert client.get("/room/api/sources/3", headers=as_student(other)).json["source"] is None


def test_without_a_known_secret_nothing_is_read_or_posted(client, room):
    for headers in ({}, as_student("x" * 43), as_student("")):
        refused(client.post("/room/api/submissions", json={"exercise": "3", "source": "x"},
                            headers=headers), 401, "join the room first")
        refused(client.get("/room/api/sources/3", headers=headers), 401, "join the room first")
        refused(client.put("/room/api/sources/3", json={"source": "x"}, headers=headers), 401,
                "join the room first")
    assert room.store.waiting_count() == 0


def test_another_student_s_submission_is_a_404(client, room, grading):
    ada, bob = join(client, room, "Ada"), join(client, room, "Bob")
    posted = client.post("/room/api/submissions", json={"exercise": "3", "source": "# Ada's"},
                         headers=as_student(ada))
    assert posted.status_code == 202
    submission = posted.json["id"]
    assert client.get(f"/room/api/submissions/{submission}",
                      headers=as_student(ada)).status_code == 200
    refused(client.get(f"/room/api/submissions/{submission}", headers=as_student(bob)), 404,
            "no check of yours")
    refused(client.get(f"/room/api/submissions/{submission}"), 401, "join the room first")
    refused(client.get("/room/api/submissions/made-up", headers=as_student(ada)), 404,
            "no check of yours")


def test_a_submission_shows_its_checks_as_they_complete_then_its_verdict(client, room,
                                                                         grading):
    secret = join(client, room, "Ada")
    posted = client.post("/room/api/submissions", json={"exercise": "3", "source": "# mine"},
                         headers=as_student(secret))
    url = f"/room/api/submissions/{posted.json['id']}"
    running = wait_for(lambda: (seen := client.get(url, headers=as_student(secret)).json)
                       ["checks"] and seen)
    assert running["state"] == "running" and running["position"] == 0
    assert running["checks"][0]["lesson"] == "C11" and running["passed"] is None
    grading.go.set()
    done = wait_for(lambda: (seen := client.get(url, headers=as_student(secret)).json)
                    ["state"] == "done" and seen)
    assert done["passed"] is False and done["message"] == "1 of 1 failed"
    assert done["position"] is None
    assert [r["broken_lesson"] for r in room.board()["results"]] == ["C11"]


@pytest.mark.parametrize("body, status, words", [
    ({"exercise": "99", "source": "x"}, 422, "'exercise' must be one of"),
    ({"exercise": 3, "source": "x"}, 422, "'exercise' must be one of"),
    ({"exercise": "3"}, 400, "'source' must be text"),
    ({"exercise": "3", "source": ["x"]}, 400, "'source' must be text"),
    ({"exercise": "3", "source": "\ud800"}, 400, "'source' must be text"),
])
def test_a_submission_that_is_not_one_is_refused_and_queues_nothing(client, room, body, status,
                                                                     words):
    secret = join(client, room, "Ada")
    refused(client.post("/room/api/submissions", json=body, headers=as_student(secret)), status,
            words)
    assert room.store.waiting_count() == 0


# --- the exercises ------------------------------------------------------------------------

def test_the_exercises_and_their_skeletons(client):
    listed = client.get("/room/api/exercises").json["exercises"]
    assert [e["id"] for e in listed] == list(EXERCISES)
    answer = client.get("/room/api/exercises/3/skeleton?lang=zh_CN")
    assert answer.status_code == 200
    assert answer.content_type == "text/plain; charset=utf-8"
    # In the student's language: the Chinese twin's words, the same code.
    assert answer.get_data(as_text=True) == skeleton_text(EXERCISES["3"], "zh_CN")
    assert "练习 3" in answer.get_data(as_text=True)
    english = client.get("/room/api/exercises/3/skeleton?lang=en").get_data(as_text=True)
    assert english == skeleton_text(EXERCISES["3"], "en") and "练习" not in english
    refused(client.get("/room/api/exercises/99/skeleton"), 422, "'exercise' must be one of")


# --- the instructor -----------------------------------------------------------------------

def test_freeing_a_name_lets_a_new_browser_take_it_and_the_old_secret_stops(client, room):
    old = join(client, room, "Ada")
    client.put("/room/api/sources/3", json={"source": "# kept"}, headers=as_student(old))
    refused(client.post("/room/api/students/ada/free"), 401, "admin token")
    refused(client.post("/room/api/students/ada/free", headers={"X-Admin-Token": "guess"}), 401,
            "admin token")
    assert client.post("/room/api/students/ada/free",
                       headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    refused(client.get("/room/api/me", headers=as_student(old)), 401, "join the room first")
    new = join(client, room, "Ada")
    assert client.get("/room/api/sources/3", headers=as_student(new)).json["source"] == "# kept"
    refused(client.post("/room/api/students/Nobody/free", headers={"X-Admin-Token": TOKEN}),
            404, "no student named Nobody")


def test_removing_a_name_takes_its_results_and_frees_it(client, room):
    ada = join(client, room, "Ada")
    join(client, room, "Bob")
    room.record_self_reported({"name": "Ada", "exercise": "1", "passed": True,
                               "broken_lesson": None})
    refused(client.delete("/room/api/students/Ada"), 401, "admin token")
    assert room.board()["students"] == ["Ada", "Bob"]
    assert client.delete("/room/api/students/ADA",
                         headers={"X-Admin-Token": TOKEN}).status_code == 200
    assert room.board() == {"students": ["Bob"], "results": []}
    refused(client.get("/room/api/me", headers=as_student(ada)), 401, "join the room first")
    join(client, room, "Ada")  # the name is free again, with nothing of the old one's


# --- the board ----------------------------------------------------------------------------

def test_self_reported_results_are_apart_and_never_passed_by_the_room(client, room, grading):
    secret = join(client, room, "Ada")
    room.record_self_reported({"name": "Ada", "exercise": "3", "passed": True,
                               "broken_lesson": None})
    room.record_self_reported({"name": "Cy", "exercise": "1", "passed": True,
                               "broken_lesson": None})
    grading.go.set()
    posted = client.post("/room/api/submissions", json={"exercise": "3", "source": "# mine"},
                         headers=as_student(secret)).json["id"]
    wait_for(lambda: client.get(f"/room/api/submissions/{posted}",
                                headers=as_student(secret)).json["state"] == "done")
    board = client.get("/room/api/board").json
    assert board["students"] == ["Ada", "Cy"]
    ada = {r["source"]: r for r in board["results"] if r["name"] == "Ada"}
    assert ada["self-reported"]["passed"] is True
    assert ada["room"]["passed"] is False and ada["room"]["broken_lesson"] == "C11"
    passed_by_room = [r for r in board["results"] if r["passed"] and r["source"] == "room"]
    assert passed_by_room == []


@pytest.mark.parametrize("body, status, words", [
    ({"name": "Li\u200b", "exercise": "3", "passed": True}, 422, "invisible"),
    ({"name": "Li", "exercise": "0", "passed": True}, 422, "'exercise' must be one of"),
    ({"name": "Li", "exercise": "3", "passed": "yes"}, 400, "'passed' must be true or false"),
    ({"name": "Li", "exercise": "3", "passed": False, "broken_lesson": "<b>"}, 400,
     "'broken_lesson'"),
])
def test_a_self_reported_result_that_is_not_one_keeps_nothing(room, body, status, words):
    with pytest.raises(Refused) as refusal:
        room.record_self_reported(body)
    assert refusal.value.status == status and words in str(refusal.value.message)
    assert room.board()["results"] == []


#: The board's budget, set when the room had eight exercises: 50 KB of JSON for 30 students
#: by 8, so about 213 bytes a cell; and 50 KB as a browser receives it (gzip), whatever the
#: number of exercises.
BYTES_A_CELL = 50 * 1024 // (30 * 8)
SENT_BYTES = 50 * 1024


def test_the_board_of_30_students_by_every_exercise_keeps_its_budget(client, room, grading):
    """Every name as long as a name may be, in Chinese (three bytes a character), every
    exercise graded by the room: the JSON within its bytes a cell, and as a browser
    receives it (gzip) under 50 KB. With a self-reported result in every cell besides,
    still under 50 KB as sent."""
    names = [f"{number:02d} " + "李" * (MAX_CHARS - 3) for number in range(30)]
    students = [room.store.student(room.store.join(name)) for name in names]
    cells = len(names) * len(EXERCISES)
    grading.go.set()
    for exercise in EXERCISES:
        checks = [room.submit(student, exercise, "# mine", "en") for student in students]
        wait_for(lambda: all(room.store.submission(check, student)["state"] == "done"
                             for check, student in zip(checks, students)))
    answer = client.get("/room/api/board")
    sent = client.get("/room/api/board", headers={"Accept-Encoding": "gzip, deflate"})
    print(f"board of 30 x {len(EXERCISES)}, room results only: {len(answer.data)} bytes as "
          f"JSON, {len(sent.data)} as sent")
    assert len(answer.json["results"]) == cells
    assert len(answer.data) <= cells * BYTES_A_CELL
    assert len(sent.data) <= SENT_BYTES
    for name in names:
        for exercise in EXERCISES:
            room.record_self_reported({"name": name, "exercise": exercise, "passed": True})
    plain = client.get("/room/api/board")
    assert len(plain.json["results"]) == 2 * cells
    sent = client.get("/room/api/board", headers={"Accept-Encoding": "gzip, deflate"})
    assert sent.headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(sent.data)) == plain.json
    print(f"with a self-reported result in every cell: {len(plain.data)} bytes as JSON, "
          f"{len(sent.data)} bytes as sent")
    assert len(sent.data) <= SENT_BYTES


def test_an_unchanged_board_is_a_304_to_a_browser_that_has_it(client, room):
    join(client, room, "Ada")
    first = client.get("/room/api/board")
    again = client.get("/room/api/board", headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304 and again.data == b""
    join(client, room, "Bob")
    changed = client.get("/room/api/board", headers={"If-None-Match": first.headers["ETag"]})
    assert changed.status_code == 200 and changed.json["students"] == ["Ada", "Bob"]


def test_a_restart_keeps_the_code_the_names_the_sources_and_the_board(tmp_path, grading):
    folder: Path = tmp_path / "room"
    first = Room.open(folder, workers=1, grade=grading)
    try:
        secret = first.store.join("Ada")
        first.store.save_source(first.store.student(secret), "3", "# kept")
        first.record_self_reported({"name": "Ada", "exercise": "3", "passed": False,
                                    "broken_lesson": "C12"})
        code, board = first.code, first.board()
    finally:
        first.close()
    again = Room.open(folder, workers=1, grade=grading)
    try:
        assert again.code == code
        assert again.board() == board
        student = again.store.student(secret)
        assert student is not None and student.name == "Ada"
        assert again.store.source(student, "3")["source"] == "# kept"
    finally:
        again.close()
    reused = Room.open(folder, code="abcd23", workers=1, grade=grading)
    try:
        assert reused.code == "ABCD23" and reused.board() == board
    finally:
        reused.close()


def test_without_an_admin_token_the_instructor_s_actions_are_open_as_the_control_s(room):
    """``lockshop up`` without LOCKSHOP_ADMIN_TOKEN says anyone may act; the room agrees."""
    client = room_app(room, token=None).test_client()
    join(client, room, "Ada")
    assert client.post("/room/api/students/Ada/free").status_code == 200
    assert client.delete("/room/api/students/Ada").status_code == 200
    assert room.board()["students"] == []


def test_the_room_keeps_the_token_of_the_app_it_is_served_on(room):
    """The app's maker (the control) owns its token: serving the room on it never
    replaces it, and an app that never said whether it has one is refused."""
    client = room_app(room).test_client()
    join(client, room, "Ada")
    assert client.delete("/room/api/students/Ada").status_code == 401
    assert client.delete("/room/api/students/Ada",
                         headers={"X-Admin-Token": TOKEN}).status_code == 200
    with pytest.raises(ValueError, match="before serving the room"):
        serve(Flask(__name__), room)


def test_the_board_answers_while_a_write_is_held(room):
    """Readers have their own connection (WAL): a write that takes long (a slow disk, a
    long transaction) does not hold up thirty browsers reading the board."""
    room.store.join("Ada")
    holding, release = threading.Event(), threading.Event()

    def long_write():
        with room.store._writing() as db:
            db.execute("UPDATE students SET name = 'Ada (renamed)'")
            holding.set()
            release.wait(30)

    writer = threading.Thread(target=long_write)
    writer.start()
    try:
        assert holding.wait(10)
        assert room.board()["students"] == ["Ada"]  # the last commit, not the open write
    finally:
        release.set()
        writer.join()
    assert room.board()["students"] == ["Ada (renamed)"]


def test_the_room_s_file_is_the_instructor_s_alone(client, room):
    """Every source and every secret's hash are in it: the gradings, which run as another
    user, must not read it, whatever folder the room is kept in."""
    join(client, room, "Ada")
    folder = room.store.path.parent
    kept = [path for path in folder.iterdir() if path.name.startswith(room.store.path.name)]
    assert {path.name for path in kept} >= {"room.sqlite3", "room.sqlite3-wal"}
    for path in kept:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, f"others can read {path.name}"

