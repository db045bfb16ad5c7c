"""A Redis server of ours is ready only when it is ours that answers on its port: a
server that another took the port of (between ``free_port()`` and the bind, or while ours
was down for a restart) must not be handed out, or two gradings would share one server
(seen: exercise 11's sale found two holders that both wrote, 1 round in 10)."""

from __future__ import annotations

import pytest

from helpers import require
from lockshop.cluster.processes import StartError
from lockshop.cluster.redis_servers import RedisServer, redis_server_binary


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
        from lockshop.cluster.redis_servers import _folder_of
        assert _folder_of(server.port, "127.0.0.1") == str((tmp_path / "ours").resolve())
    finally:
        server.stop()
