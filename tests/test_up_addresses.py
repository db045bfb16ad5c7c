"""Where ``lockshop up`` says it answers: addresses a student's laptop can reach (never
0.0.0.0), the room's address on a fixed port, and a room code that survives a restart.

Nothing here sends a packet off the loopback: the LAN address is checked by binding a
socket to it (only the machine's own addresses can be bound), and the pages are read
through 127.0.0.1, which an all-interfaces server also answers on.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

import pytest
import requests

from helpers import lockshop_up, ports_for_up, require
from lockshop.cli.parser import build_parser
from lockshop.cluster.processes import StartError
from lockshop.console import CONTROL_PORT, launch
from lockshop.console.launch import Console
from lockshop.cluster.addresses import lan_address, reachable_url
from lockshop.cluster.redis_servers import redis_server_binary

pytestmark = pytest.mark.cluster


def test_the_lan_address_is_one_of_this_machine_s_and_never_every_interface():
    address = lan_address()
    assert address not in ("0.0.0.0", "")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((address, 0))  # EADDRNOTAVAIL for an address that is not the machine's


def test_a_url_on_every_interface_is_said_with_the_lan_address():
    assert reachable_url("http://0.0.0.0:8000/console") == f"http://{lan_address()}:8000/console"
    assert reachable_url("http://127.0.0.1:8000/console") == "http://127.0.0.1:8000/console"


def test_the_control_takes_its_fixed_port_and_another_only_if_it_is_taken(monkeypatch):
    """So the room's address is the same at every start (8090: not the shop's 8000 and
    up, not the handbook's 8100); a second ``up`` on the machine still starts. The
    fixed port is played by a free one here: tests run side by side."""
    assert CONTROL_PORT == 8090 and build_parser().parse_args(["up"]).control_port is None
    fixed = ports_for_up(1)
    monkeypatch.setattr(launch, "CONTROL_PORT", fixed)
    with Console("127.0.0.1") as console:
        assert console.control_url == f"http://127.0.0.1:{fixed}" and not console.moved
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", fixed))
        taken.listen()
        with Console("127.0.0.1") as console:
            assert console.moved and console.control_url != f"http://127.0.0.1:{fixed}"
        with pytest.raises(StartError, match=f"the control's port {fixed} on 127.0.0.1"):
            Console("127.0.0.1", fixed)  # asked for by name: that one or none


def test_up_on_every_interface_prints_and_embeds_only_reachable_addresses(tmp_path):
    require(redis_server_binary() is not None, "redis-server is not installed")
    port, control_port = ports_for_up(1), ports_for_up(1)
    with lockshop_up("--host", "0.0.0.0", "--instances", "1", "--port", str(port),
                     "--control-port", str(control_port), cwd=tmp_path) as text:
        lan = lan_address()
        assert "0.0.0.0" not in text, text
        assert re.search(rf"^room: http://{re.escape(lan)}:{control_port}/room/ ", text,
                         re.M), text
        assert f"http://{lan}:{port}/console" in text
        page = requests.get(f"http://127.0.0.1:{port}/console", timeout=10).text
        assert f'data-control="http://{lan}:{control_port}"' in page
        state = requests.get(f"http://127.0.0.1:{control_port}/control/state", timeout=10).json()
        assert [i["url"] for i in state["instances"]] == [f"http://{lan}:{port}"]


def room_code_of(text: str) -> str:
    found = re.search(r"^room: \S+ +\(code (\w+)\)", text, re.M)
    assert found, text
    return found.group(1)


def test_a_restart_keeps_the_room_code_and_room_code_sets_one(tmp_path):
    require(redis_server_binary() is not None, "redis-server is not installed")
    control_port = ports_for_up(1)

    def up(*args: str) -> str:
        with lockshop_up("--instances", "1", "--port", str(ports_for_up(1)), "--control-port",
                         str(control_port), *args, cwd=tmp_path) as text:
            return text

    first = up()
    assert room_code_of(up()) == room_code_of(first)
    assert room_code_of(up("--room-code", "zebra42")) == "ZEBRA42"
    again = up()
    assert room_code_of(again) == "ZEBRA42"
    # The same port, so the same address: what the students bookmarked still works.
    assert re.search(rf"^room: http://127.0.0.1:{control_port}/room/ ", again, re.M), again


def test_a_room_code_no_one_could_type_is_refused_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "lockshop.cli", "up", "--room-code", "LOCK0"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "LANGUAGE": "en"})
    assert done.returncode == 2
    assert "a room code is 4 to 16 of these letters and digits: ABC" in done.stderr  # no O, 0
    assert not (tmp_path / ".lockshop").exists()  # and nothing was started
