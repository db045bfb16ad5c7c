"""The grader's Redis proxy (``lockshop.cluster.wire.RedisProxy``), on a real Redis with a
password: it sees a lock's commands as the in-process ``WatchedRedis`` did, steps in after
the first read with the server's work done and the client held, and is the only way in."""

from __future__ import annotations

import threading

import pytest
import redis

from helpers import require
from lockshop.cluster.redis_servers import RedisServer, redis_server_binary
from lockshop.cluster.wire import RedisProxy, WatchedRedis
from lockshop.exercises.grading import Background

pytestmark = pytest.mark.cluster

KEY = "lockshop:lock:proxied"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require(redis_server_binary() is not None, "redis-server is not installed")
    with RedisServer(tmp_path_factory.mktemp("proxy"), password="s3cret-for-the-grader") as up:
        yield up


@pytest.fixture()
def proxy(server):
    with RedisProxy(("127.0.0.1", server.port), key=KEY, password=server.password) as watching:
        yield watching


def steps(client: redis.Redis) -> None:
    """A lock's life on ``client``: a SET NX PX, a GET, a script, a WATCH/MULTI release,
    and a BLPOP that times out and one that is woken."""
    client.delete("queue:1")
    client.set(KEY, "token", nx=True, px=5000)
    client.get(KEY)
    client.eval("return redis.call('PEXPIRE', KEYS[1], ARGV[1])", 1, KEY, 5000)
    with client.pipeline() as pipe:
        pipe.watch(KEY)
        pipe.get(KEY)
        pipe.multi()
        pipe.delete(KEY)
        pipe.execute()
    client.blpop(["queue:1"], timeout=0.1)
    client.rpush("queue:1", "go")
    client.blpop(["queue:1"], timeout=1)


def test_it_sees_what_the_in_process_client_saw(server, proxy):
    direct = WatchedRedis.watching(server.url, KEY)
    through = redis.Redis.from_url(proxy.url)
    try:
        steps(direct)
        steps(through)
    finally:
        direct.close()
        through.close()
    assert proxy.commands == direct.commands == \
        ["SET", "GET", "EVAL", "WATCH", "GET", "MULTI", "DEL", "EXEC"]
    assert (proxy.sent, proxy.blocking, proxy.woken) == \
        (direct.sent, direct.blocking, direct.woken)
    assert (proxy.blocking, proxy.woken) == (2, 1)


def test_it_holds_the_client_right_after_the_first_read(server, proxy):
    paused, go = threading.Event(), threading.Event()

    def after(kind: str, command: str) -> None:
        if kind == "read" and not paused.is_set():
            paused.set()
            go.wait(10)

    proxy.after = after
    client = redis.Redis.from_url(proxy.url)
    inspector = redis.Redis.from_url(server.url)
    try:
        client.set(KEY, "A", px=5000)
        reading = threading.Thread(target=lambda: client.get(KEY))
        reading.start()
        assert paused.wait(10)
        # The read is done in the server, the client still waits for its answer.
        inspector.set(KEY, "B", px=5000)
        assert reading.is_alive()
        go.set()
        reading.join(10)
        assert not reading.is_alive() and inspector.get(KEY) == b"B"
    finally:
        client.close()
        inspector.close()


def test_it_is_the_only_way_in_and_refuses_the_servers_settings(server, proxy):
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=server.port).ping()  # straight to the server: no password
    client = redis.Redis.from_url(proxy.url)
    try:
        assert client.ping()
        for command in (("CONFIG", "GET", "requirepass"), ("CONFIG", "SET", "requirepass", ""),
                        ("CLIENT", "KILL", "TYPE", "normal"), ("CLIENT", "LIST"),
                        ("ACL", "LIST"), ("SHUTDOWN", "NOSAVE"), ("AUTH", "guess")):
            with pytest.raises(redis.ResponseError, match="not allowed here"):
                client.execute_command(*command)
        # Refused in its turn: the connection still answers in order.
        assert client.set("x", 1) and client.get("x") == b"1"
    finally:
        client.close()
    assert redis.Redis.from_url(server.url).config_get("requirepass") == \
        {"requirepass": server.password}


def test_another_connection_cannot_go_round_the_watch(server, proxy):
    """The list says what the named client sent; the counters and the step-in take every
    connection, so a lock that reads the key on a connection of its own is still held."""
    paused = threading.Event()
    proxy.watch(KEY, client_name="watched-a")
    proxy.after = lambda kind, command: paused.set() if kind == "read" else None
    named = redis.Redis.from_url(proxy.url + "?client_name=watched-a")
    aside = redis.Redis.from_url(proxy.url)
    try:
        named.set(KEY, "A", px=5000)
        sent = proxy.sent
        aside.get(KEY)
        assert paused.is_set() and proxy.sent == sent + 1
        assert proxy.commands == ["SET"]
    finally:
        named.close()
        aside.close()


def test_once_closed_it_serves_no_one(server):
    proxy = RedisProxy(("127.0.0.1", server.port), key=KEY, password=server.password)
    connected = redis.Redis.from_url(proxy.url, socket_timeout=5)
    try:
        assert connected.ping()
        proxy.close()
        # The connection made before is cut (not left served by a thread blocked in
        # recv), and no new one is accepted.
        with pytest.raises(redis.ConnectionError):
            connected.ping()
        with pytest.raises(redis.ConnectionError):
            redis.Redis.from_url(proxy.url, socket_timeout=5).ping()
    finally:
        connected.close()
        proxy.close()


def test_a_paused_server_behind_it_takes_the_command_and_answers_on_resume(server):
    # SIGSTOP: a new connection's sign-in goes unanswered. The client's command must wait
    # as it would at the server itself, however long the pause (the proxy once gave up
    # after 5 s, cut the client, and left its own socket to the server open).
    with RedisProxy(("127.0.0.1", server.port), password=server.password) as proxy:
        client = redis.Redis.from_url(proxy.url, socket_timeout=30)
        server.pause()
        try:
            answer = Background(client.ping)
            answer.join(6)
            assert not answer.done()  # taken, and not answered while paused
        finally:
            server.resume()
        try:
            assert answer.result(10) is True
        finally:
            client.close()
