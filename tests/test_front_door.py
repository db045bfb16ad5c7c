"""lockshop's one front door (``lockshop.front_door``): the console's control and the room's
API refuse the same bad input the same way, on the app ``lockshop up`` serves (the
control's, the room's blueprints on it; its store a real SQLite file in tmp_path).

Each bad input below goes through both doors: the room's API, where a student joins and
submits, and the control, where ``exercise check --report`` posts a self-reported result.
The same status, the same ``{"error", "message"}``, the same words, and nothing kept.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from lockshop.console.control import control_app
from lockshop.console.control.limits import cap_of
from lockshop.room import Room
from lockshop.room import self_reported
from lockshop.room.api import JOIN_BYTES

TOKEN = "front-door-token"


def never_graded(exercise: str, source: str, language: str, *, on_check):
    raise AssertionError("nothing here is to be graded")


@pytest.fixture()
def room(tmp_path):
    opened = Room.open(tmp_path / "room", workers=1, grade=never_graded)
    yield opened
    opened.close()


@pytest.fixture()
def client(room):
    """The control's app with the room's page and API on it, as ``up`` serves them: only
    the parts a refusal reaches (the room, the token) are there."""
    control = SimpleNamespace(room=room, config=SimpleNamespace(admin_token=TOKEN))
    return control_app(control).test_client()


def at_the_room(client, room, name="Ada", exercise="3", body: bytes | None = None):
    """Through the room's door: join with ``name``, then submit to ``exercise``."""
    if body is not None:
        return client.post("/room/api/join", data=body, content_type="application/json")
    joined = client.post("/room/api/join", json={"code": room.code, "name": name})
    if joined.status_code != 201:
        return joined
    return client.post("/room/api/submissions", json={"exercise": exercise, "source": "#"},
                       headers={"X-Student": joined.json["student"]})


def at_the_control(client, room, name="Ada", exercise="3", body: bytes | None = None):
    """Through the control's door: a self-reported result, as ``--report`` posts it."""
    if body is None:
        body = json.dumps({"name": name, "exercise": exercise, "passed": True,
                           "broken_lesson": None, "checks": []}).encode()
    return client.post("/control/room/results", data=body, content_type="application/json",
                       headers={"X-Room-Code": room.code})


def refusal(answer) -> tuple[int, str]:
    assert set(answer.json) == {"error", "message"}, answer.json
    return answer.status_code, answer.json["error"]


@pytest.mark.parametrize("name, status, words", [
    ("", 422, "type a name"),
    ("Li\u200b", 422, "invisible character"),
    ("\u202eiL", 422, "direction mark"),
    ("Li\x00", 422, "control character"),
    ("李" * 33, 422, "at most 32 characters"),
    (7, 422, "'name' must be text"),
], ids=["empty", "zero-width", "bidi", "control", "33-characters", "not-text"])
def test_a_bad_name_is_refused_alike_at_both_doors(client, room, name, status, words):
    answers = [door(client, room, name=name) for door in (at_the_room, at_the_control)]
    assert [refusal(answer) for answer in answers] == [refusal(answers[0])] * 2
    assert refusal(answers[0])[0] == status and words in refusal(answers[0])[1]
    assert room.board() == {"students": [], "results": []}


def test_a_name_of_32_characters_passes_both_doors(client, room):
    """The one rule's edge: a name of 64 characters once passed one door and not the other."""
    name = "李" * 32
    assert at_the_room(client, room, name=name).status_code == 202
    assert at_the_control(client, room, name=name).status_code == 201
    assert {r["name"] for r in room.board()["results"]} == {name}


@pytest.mark.parametrize("exercise", ["99", "0", 3, None])
def test_an_unknown_exercise_is_refused_alike_at_both_doors(client, room, exercise):
    answers = [at_the_room(client, room, exercise=exercise),
               at_the_control(client, room, name="Bob", exercise=exercise)]
    assert refusal(answers[0]) == refusal(answers[1])
    assert refusal(answers[0])[0] == 422 and "'exercise' must be one of" in answers[0].json[
        "error"]
    assert room.board()["results"] == [] and room.store.waiting_count() == 0


@pytest.mark.parametrize("body", [b"", b"not json", b"[1, 2]", b'"Ada"', b"\xff\xfe",
                                  b"[" * 3000])
def test_a_body_that_is_not_a_json_object_is_400_alike_at_both_doors(client, room, body):
    answers = [door(client, room, body=body) for door in (at_the_room, at_the_control)]
    assert refusal(answers[0]) == refusal(answers[1]) == (400, "send a JSON object")
    assert room.board() == {"students": [], "results": []}


def test_a_body_past_its_cap_is_413_at_both_doors_and_said_alike(client, room):
    """Each path has its one cap, at the door: the same shape, status and words."""
    for path, cap in (("/room/api/join", JOIN_BYTES),
                      ("/control/room/results", self_reported.MAX_BYTES)):
        assert cap_of(path) >= cap
        answer = client.post(path, data=b"x" * (cap_of(path) + 1),
                             content_type="application/json",
                             headers={"X-Room-Code": room.code})
        assert refusal(answer) == (413, f"a request here is at most {cap_of(path)} bytes")
    # Behind the door's cap, a join takes 4 KB, and says so in the room's words.
    answer = client.post("/room/api/join", data=b"x" * (JOIN_BYTES + 1),
                         content_type="application/json")
    assert refusal(answer) == (413, "a request to the room is at most 4 KB")
    assert room.board() == {"students": [], "results": []}


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer guess"},
                                     {"X-Admin-Token": "guess"},
                                     {"Authorization": f"Basic {TOKEN}"}],
                         ids=["none", "wrong-bearer", "wrong-header", "not-bearer"])
def test_the_admin_token_is_checked_alike_at_both_doors(client, room, headers):
    room.store.join("Ada")
    answers = [client.delete("/room/api/students/Ada", headers=headers),
               client.post("/control/sales", json={}, headers=headers)]
    assert refusal(answers[0]) == refusal(answers[1])
    assert refusal(answers[0]) == (401, "this needs the admin token (Authorization: Bearer "
                                        "<token>)")
    assert room.board()["students"] == ["Ada"]


@pytest.mark.parametrize("headers", [{"Authorization": f"Bearer {TOKEN}"},
                                     {"X-Admin-Token": TOKEN}], ids=["bearer", "header"])
def test_the_admin_token_opens_both_doors_either_way(client, room, headers):
    room.store.join("Ada")
    assert client.post("/room/api/students/Ada/free", headers=headers).status_code == 200
    # Past the token, the control's sale route reads its body (and refuses this one).
    answer = client.post("/control/sales", data=b"[]", content_type="application/json",
                         headers=headers)
    assert refusal(answer)[0] == 400 and "send a JSON object" in refusal(answer)[1]


def test_an_unknown_path_is_the_same_json_at_both_prefixes(client):
    for path in ("/room/api/nothing", "/control/nothing"):
        answer = client.get(path)
        assert answer.status_code == 404 and set(answer.json) == {"error", "message"}


def test_a_refusal_is_said_in_the_request_s_language_at_both_doors(client, room):
    chinese = {"Accept-Language": "zh-CN"}
    answers = [client.post("/room/api/join", data=b"[]", content_type="application/json",
                           headers=chinese),
               client.post("/control/room/results", data=b"[]",
                           content_type="application/json",
                           headers={**chinese, "X-Room-Code": room.code})]
    for answer in answers:
        assert answer.json["error"] == "send a JSON object"
        assert answer.json["message"] != answer.json["error"]  # the catalog's Chinese
    assert answers[0].json == answers[1].json


@pytest.mark.parametrize("method, path, status, english", [
    ("get", "/room/api/nothing", 404, "nothing is at this address"),
    ("get", "/control/nothing", 404, "nothing is at this address"),
    ("get", "/room/api/join", 405, "this address does not take GET"),
], ids=["room-404", "control-404", "405"])
def test_flask_s_own_refusals_are_said_in_the_request_s_language(client, method, path,
                                                                   status, english):
    answer = getattr(client, method)(path, headers={"Accept-Language": "zh-CN"})
    assert answer.status_code == status and answer.json["error"] == english, answer.json
    assert answer.json["message"] != english  # the catalog's Chinese
