"""The grader's ZooKeeper proxy reads a client's session and its children's watches off
the wire, on a real server, as a kazoo client of the test's own makes them."""

from __future__ import annotations

import threading

import pytest
from kazoo.client import KazooClient

from helpers import require, wait_for
from lockshop.cluster.zookeeper_servers import ZooKeeperServer, zookeeper_installed
from lockshop.cluster.zookeeper_sessions import end_session
from lockshop.cluster.zookeeper_wire import ZooKeeperProxy

pytestmark = pytest.mark.cluster


@pytest.fixture()
def client_through_proxy(tmp_path):
    require(zookeeper_installed(), "the zookeeper server is not installed")
    with ZooKeeperServer(tmp_path, "zookeeper") as server, \
            ZooKeeperProxy((server.host.address, server.port)) as proxy:
        client = KazooClient(hosts=proxy.address, timeout=1.5)
        client.start(timeout=10)
        try:
            yield server, proxy, client
        finally:
            client.stop()
            client.close()


def test_the_proxy_knows_the_session_and_the_childrens_watches(client_through_proxy):
    server, proxy, client = client_through_proxy
    assert (proxy.session, proxy.password) == client.client_id
    client.ensure_path("/queue")
    fired = threading.Event()
    client.get_children("/queue", watch=lambda event: fired.set())
    client.get_children("/", watch=None)  # read without a watch: none set
    assert proxy.children_watched() == ["/queue"]
    client.create("/queue/a")  # fires it, once
    assert fired.wait(10)
    assert proxy.children_watched() == []


def test_a_session_ended_with_what_the_proxy_read_is_replaced(client_through_proxy):
    server, proxy, client = client_through_proxy
    client.ensure_path("/queue")
    client.get_children("/queue", watch=lambda event: None)
    first = proxy.session
    end_session(proxy.session, proxy.password, server.address)
    # The proxy reads the new session as it passes, before kazoo has taken it in.
    wait_for(lambda: proxy.session != first and client.client_id is not None
             and client.client_id[0] != first, timeout=10)
    assert proxy.session == client.client_id[0]
    assert proxy.children_watched() == []  # the new session holds none of the old one's
