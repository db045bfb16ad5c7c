"""The polling handler answers ``select`` as kazoo's own handler does.

kazoo relies on three answers: ready when there is something to read, not
ready after the timeout, and ready (so that the next ``recv`` raises or
returns b"") when the peer has gone. Both handlers are asked the same
questions; the locks' tests then run every ZooKeeper scenario on it.
And a watch marked ``run_inline`` runs on the connection thread, the others
on kazoo's callback thread, on a real ZooKeeper.

Our client sends a request from the thread that makes it (kazoo's own sends
it from its connection thread): many threads sending at once each get their
own answer, a request made while the connection is down waits for it as in
kazoo, and one sent when the connection goes is failed at once, not lost.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol.serialization import Exists

from helpers import wait_for
from locks.support.zk_client import PollingHandler, new_client, run_inline

HANDLERS = [SequentialThreadingHandler, PollingHandler]


@pytest.fixture
def pair():
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda h: h.__name__)
def test_nothing_to_read_waits_for_the_timeout(handler, pair):
    left, _ = pair
    started = time.monotonic()
    assert handler().select([left], [], [], 0.05) == ([], [], [])
    assert time.monotonic() - started >= 0.04


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda h: h.__name__)
def test_data_makes_a_socket_readable(handler, pair):
    left, right = pair
    right.send(b"x")
    assert handler().select([left, right], [], [], 1.0)[0] == [left]
    assert handler().select([], [left], [], 1.0)[1] == [left]  # room to send


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda h: h.__name__)
def test_a_peer_that_went_makes_a_socket_readable(handler, pair):
    left, right = pair
    right.close()
    readable, _, _ = handler().select([left], [], [], 1.0)
    assert readable == [left]
    assert left.recv(1) == b""


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda h: h.__name__)
def test_a_closed_socket_is_refused(handler, pair):
    left, _ = pair
    left.close()
    with pytest.raises(TypeError):
        handler().select([left], [], [], 0.01)


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda h: h.__name__)
def test_plain_descriptors_are_accepted(handler, pair):
    left, right = pair
    right.send(b"x")
    assert handler().select([left.fileno()], [], [], 1.0)[0] == [left.fileno()]


def test_a_watch_marked_run_inline_runs_on_the_connection_thread(zookeeper):
    client = new_client(zookeeper.address, timeout=10)
    client.start(timeout=10)
    try:
        ran_on = {}
        ran = {"inline": threading.Event(), "queued": threading.Event()}

        def watcher(kind):
            def watch(event):  # an inline watch must not block: it holds up the connection
                ran_on[kind] = threading.current_thread()
                ran[kind].set()
            return watch

        inline, queued = watcher("inline"), watcher("queued")
        inline.run_inline = True
        client.create("/watched", b"")
        client.exists("/watched", watch=inline)
        client.exists("/watched", watch=queued)
        client.set("/watched", b"changed")
        assert ran["inline"].wait(5) and ran["queued"].wait(5)
        # The queued watch runs on kazoo's callback thread; the inline one on the
        # thread that read the event (the connection's), neither ours nor that one.
        assert ran_on["queued"] is not threading.current_thread()
        assert ran_on["inline"] is not threading.current_thread()
        assert ran_on["inline"] is not ran_on["queued"]
    finally:
        client.stop()
        client.close()


def test_an_answer_callback_marked_run_inline_runs_where_the_answer_is_read(zookeeper):
    client = new_client(zookeeper.address, timeout=10)
    client.start(timeout=10)
    ran_on = {}
    ran = {"inline": threading.Event(), "queued": threading.Event()}

    def callback(kind):
        def record(result):
            ran_on[kind] = threading.current_thread()
            ran[kind].set()
        return record
    try:
        zookeeper.pause()  # the answer comes after both callbacks are linked
        try:
            asked = client.exists_async("/")
            asked.rawlink(run_inline(callback("inline")))
            asked.rawlink(callback("queued"))
        finally:
            zookeeper.resume()
        assert ran["inline"].wait(10) and ran["queued"].wait(10)
        assert ran_on["inline"] is not threading.current_thread()
        assert ran_on["inline"] is not ran_on["queued"]  # the connection's, not the callbacks'
    finally:
        client.stop()
        client.close()


@pytest.fixture
def started():
    """Start a client (``started(client)``); every one is stopped at the end."""
    clients = []

    def start(client):
        client.start(timeout=10)
        clients.append(client)
        return client
    yield start
    for client in clients:
        client.stop()
        client.close()


def threads_that_wrote(client, kind) -> list[threading.Thread]:
    """Record, from now on, the thread that writes each request of ``client`` of
    class ``kind`` (pings and the connection's own requests are written too)."""
    writers = []
    connection = client._connection
    submit = connection._submit

    def recorded(request, timeout, xid=None):
        if isinstance(request, kind):
            writers.append(threading.current_thread())
        return submit(request, timeout, xid)
    connection._submit = recorded
    return writers


@pytest.mark.parametrize("ours", [True, False], ids=["our client", "kazoo's"])
def test_a_request_leaves_from_the_thread_that_makes_it(zookeeper, started, ours):
    client = started(new_client(zookeeper.address, timeout=10) if ours
                     else KazooClient(zookeeper.address, timeout=10))
    writers = threads_that_wrote(client, Exists)
    client.exists("/")
    if ours:
        assert writers == [threading.current_thread()]
    else:  # kazoo's connection thread wrote it
        assert len(writers) == 1 and writers[0] is not threading.current_thread()


def test_threads_sending_at_once_each_get_their_own_answer(zookeeper, started):
    # Each answer is matched to its request by the order they were sent in
    # (kazoo checks the xid): eight threads writing at once must not interleave.
    client = started(new_client(zookeeper.address, timeout=10))
    client.ensure_path("/answers")
    wrong = []

    def ask(number):
        path = client.create(f"/answers/{number}-", str(number).encode(), sequence=True)
        for _ in range(150):
            value, _stat = client.get(path)
            if value != str(number).encode():
                wrong.append((number, value))
    threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not wrong and not any(t.is_alive() for t in threads)
    assert len(client.get_children("/answers")) == 8


def test_a_request_made_while_the_connection_is_down_waits_for_it(zookeeper, started):
    client = started(new_client(zookeeper.address, timeout=30))
    writers = threads_that_wrote(client, Exists)
    zookeeper.pause()
    try:
        client._connection._socket.shutdown(socket.SHUT_RDWR)  # the connection drops
        wait_for(lambda: not client.connected)
        asked = client.exists_async("/")  # queued for the connection thread, as in kazoo
    finally:
        zookeeper.resume()
    assert asked.get(timeout=20) is not None
    assert len(writers) == 1 and writers[0] is not threading.current_thread()


def test_a_request_sent_as_the_connection_goes_is_failed_at_once(zookeeper, started):
    client = started(new_client(zookeeper.address, timeout=30))
    zookeeper.pause()  # the request is written, and never answered
    try:
        asked = client.exists_async("/")
        client._connection._socket.shutdown(socket.SHUT_RDWR)  # the connection drops
        with pytest.raises(ConnectionLoss):
            asked.get(timeout=5)  # failed with everything pending, not left to time out
    finally:
        zookeeper.resume()
