"""The polling handler answers ``select`` as kazoo's own handler does.

kazoo relies on three answers: ready when there is something to read, not
ready after the timeout, and ready (so that the next ``recv`` raises or
returns b"") when the peer has gone. Both handlers are asked the same
questions; the locks' tests then run every ZooKeeper scenario on it.
And a watch marked ``run_inline`` runs on the connection thread, the others
on kazoo's callback thread, on a real ZooKeeper.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest
from kazoo.handlers.threading import SequentialThreadingHandler

from locks.zk_client import PollingHandler, new_client

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
