"""Faults that are not a signal to a process: what a lab or a test does to a session.

Processes are hurt by whoever started them: the launcher for shop instances
(``Cluster.kill``, ``pause``, ``resume``, ``restart``), ``ServerProcess`` for
Redis and ZooKeeper servers (``stop``, ``kill``, ``pause``, ``resume``).
"""

from __future__ import annotations

from kazoo.client import KazooClient


def expire_session(client: KazooClient, hosts: str) -> None:
    """End ``client``'s ZooKeeper session on the server, as a timeout would.

    It stands for a holder paused, or cut off, for longer than its session
    timeout: the server deletes the session's ephemeral nodes at once, and the
    client hears that its session expired.
    """
    end_session(*client.client_id, hosts)


def end_session(session_id: int, password: bytes, hosts: str) -> None:
    """End the session ``session_id`` (another process's, say) on the server: a second
    connection joins it, with its id and password, and closes it."""
    twin = KazooClient(hosts=hosts, client_id=(session_id, password))
    twin.start(timeout=10)
    twin.stop()
    twin.close()
