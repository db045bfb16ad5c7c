"""The grader's ZooKeeper proxy reads a client's session and its children's watches off
the wire, on a real server, as a kazoo client of the test's own makes them."""

from __future__ import annotations

import socket
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


def _started(hosts: str) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=1.5)
    client.start(timeout=10)
    return client


def test_each_connection_s_watches_are_its_sessions_and_go_with_it(tmp_path):
    """Two clients through one proxy (the one the student's processes share): each
    session's children's watches, apart; the one that leaves takes its own along."""
    require(zookeeper_installed(), "the zookeeper server is not installed")
    with ZooKeeperServer(tmp_path, "zookeeper") as server, \
            ZooKeeperProxy((server.host.address, server.port)) as proxy:
        first, second = _started(proxy.address), _started(proxy.address)
        try:
            first.ensure_path("/a")
            second.ensure_path("/b")
            first.get_children("/a", watch=lambda event: None)
            second.get_children("/b", watch=lambda event: None)
            assert proxy.watching() == {first.client_id[0]: {"/a"},
                                        second.client_id[0]: {"/b"}}
            second.stop()
            wait_for(lambda: proxy.watching() == {first.client_id[0]: {"/a"}}, timeout=10)
        finally:
            for client in (first, second):
                client.stop()
                client.close()


def test_a_second_client_through_a_factory_s_proxy_is_refused(tmp_path):
    """A factory's proxy (``one_client``) has one connection open at a time: a session
    opened beside the factory's own is refused, and what the proxy reads stays the
    factory's session and watch. Without the refusal it read both sessions, and the
    newcomer's as the factory's, the one the grader would end. The factory's own client,
    once its connection is lost, comes back through it."""
    require(zookeeper_installed(), "the zookeeper server is not installed")
    with ZooKeeperServer(tmp_path, "zookeeper") as server, \
            ZooKeeperProxy((server.host.address, server.port), one_client=True) as proxy:
        factory_s = _started(proxy.address)
        factory_s.ensure_path("/queue")
        factory_s.get_children("/queue", watch=lambda event: None)
        mine = factory_s.client_id[0]
        beside = KazooClient(hosts=proxy.address, timeout=1.5)
        try:
            with pytest.raises(Exception):  # kazoo's own timeout: it never connected
                beside.start(timeout=3)
            assert proxy.session == mine and proxy.watching() == {mine: {"/queue"}}
            beside.stop()
            for link in list(proxy._links):  # the factory's connection lost, as a blip
                link.client.shutdown(socket.SHUT_RDWR)
            wait_for(lambda: factory_s.connected and proxy.session == mine
                     and proxy.watching() == {mine: set()}, timeout=15)
        finally:
            for client in (factory_s, beside):
                client.stop()
                client.close()
