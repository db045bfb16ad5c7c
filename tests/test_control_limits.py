"""Limits at the door of ``lockshop up``'s control: a body past its path's cap is refused
before anything reads it, whether it says its length or comes chunked, and the
launcher does not grow for it (a 1 GB chunked POST with no room code was once read
whole: up peaked at 2.2 GB)."""

from __future__ import annotations

import json
import re
import select
import socket
from pathlib import Path

import pytest
import requests

from helpers import lockshop_up, ports_for_up, require
from lockshop.cluster.redis_servers import redis_server_binary

pytestmark = pytest.mark.cluster

MB = 1024 * 1024
#: How much the launcher's peak memory may grow while refusing a 1 GB body: a bound on
#: what one request can make it hold (its cap is 64 KB; the server drains the rest in
#: reads of 10 MB, each dropped), not a measure of anything.
GROWTH_BOUND = 50 * MB


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    require(redis_server_binary() is not None, "redis-server is not installed")
    folder = tmp_path_factory.mktemp("limits")
    control_port = ports_for_up(1)
    with lockshop_up("--instances", "1", "--port", str(ports_for_up(1)), "--control-port",
                     str(control_port), cwd=folder) as text:
        control = re.search(r"control \(labs, faults, sales\): (\S+)", text)
        assert control, text
        yield {"control": control.group(1), "port": control_port,
               "pid": launcher_pid(folder)}


def launcher_pid(folder: Path) -> int:
    """The pid of the ``lockshop up`` started in ``folder`` (its own cwd says which)."""
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            if b"lockshop.cli" in command and b"up" in command and (
                    (entry / "cwd").resolve() == folder.resolve()):
                return int(entry.name)
        except (OSError, ValueError):
            continue
    raise AssertionError(f"no lockshop up runs in {folder}")


def peak_memory(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in bytes."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.M).group(1)) * 1024


def chunked_post(port: int, path: str, total: int, chunk: int = MB) -> tuple[bytes, int]:
    """POST up to ``total`` bytes to ``path`` in chunks, stopping as soon as the server
    answers (or closes): what it answered, and how many bytes were sent."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                           "application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
        piece = f"{chunk:x}\r\n".encode() + b"x" * chunk + b"\r\n"
        try:
            while sent < total and not select.select([connection], [], [], 0)[0]:
                connection.sendall(piece)
                sent += chunk
        except (BrokenPipeError, ConnectionResetError):
            pass  # it closed on us: its answer, if any, is waiting to be read
        answer = b""
        while b"\r\n\r\n" not in answer or not _whole(answer):
            data = connection.recv(65536)
            if not data:
                break
            answer += data
    return answer, sent


def _whole(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    length = re.search(rb"(?i)^content-length: (\d+)", head, re.M)
    return length is not None and len(body) >= int(length.group(1))


def status_and_json(answer: bytes) -> tuple[int, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_a_1_gb_chunked_post_without_the_room_code_is_413_and_up_does_not_grow(up):
    before = peak_memory(up["pid"])
    answer, sent = chunked_post(up["port"], "/control/room/results", total=1024 * MB)
    status, body = status_and_json(answer)
    assert status == 413 and "at most 65536 bytes" in body["error"] and body["message"]
    assert sent < 1024 * MB  # refused while it was still being sent
    assert peak_memory(up["pid"]) - before < GROWTH_BOUND


def test_a_declared_length_past_the_cap_is_413_unread(up):
    """Only the headers are sent: the answer cannot have waited for the body."""
    with socket.create_connection(("127.0.0.1", up["port"]), timeout=30) as connection:
        connection.sendall(b"POST /control/sales HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           b"Content-Type: application/json\r\n"
                           b"Content-Length: 1073741824\r\n\r\n")
        answer = b""
        while not (b"\r\n\r\n" in answer and _whole(answer)):
            answer += connection.recv(65536)
    status, body = status_and_json(answer)
    assert status == 413 and "at most 1048576 bytes" in body["error"]


def test_a_chunked_body_under_the_cap_reaches_the_route(up):
    """Refused for what it says (no room code: 401), not for how it came."""
    answer = requests.post(f"{up['control']}/control/room/results",
                           data=iter([b'{"name": "Ada", ', b'"exercise": "3"}']),
                           headers={"Content-Type": "application/json"}, timeout=10)
    assert answer.request.headers.get("Transfer-Encoding") == "chunked"
    assert answer.status_code == 401 and "room code" in answer.json()["error"]


def test_the_cap_is_the_path_s(up):
    """The room's results take 64 KB; the instructor's routes 1 MB."""
    big = b"x" * (100 * 1024)
    results = requests.post(f"{up['control']}/control/room/results", data=big, timeout=10)
    assert results.status_code == 413
    sales = requests.post(f"{up['control']}/control/sales", data=big, timeout=10,
                          headers={"Content-Type": "application/json"})
    assert sales.status_code == 400 and "JSON object" in sales.json()["error"]

