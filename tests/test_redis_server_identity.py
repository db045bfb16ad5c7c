"""A Redis server of ours is ready only when it is ours that answers on its port: when
another server took the port (between ``free_port()`` and the bind, or while ours was down
for a restart), ours exits unable to bind, and the stranger's PING must not pass for ours,
or two gradings would share one server without a word."""

from __future__ import annotations

import pytest

from helpers import require
from lockshop.cluster.processes import StartError
from lockshop.cluster.redis_servers import RedisServer, _folder_of, redis_server_binary


def test_a_server_whose_port_another_took_does_not_start(tmp_path):
    require(redis_server_binary() is not None, "redis-server is not installed")
    stranger = RedisServer(tmp_path, "stranger").start()
    try:
        ours = RedisServer(tmp_path, "ours", port=stranger.port)
        with pytest.raises(StartError, match="exited with"):
            ours.start()
        ours.stop()
    finally:
        stranger.stop()


def test_a_server_on_a_free_port_starts_and_answers_from_its_own_folder(tmp_path):
    require(redis_server_binary() is not None, "redis-server is not installed")
    server = RedisServer(tmp_path, "ours").start()
    try:
        assert _folder_of(server.port, "127.0.0.1") == str((tmp_path / "ours").resolve())
    finally:
        server.stop()
