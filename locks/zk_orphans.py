"""Nodes left behind by a lost answer: found again and deleted once we are back.

A create or a delete whose answer never came (the connection dropped, the
request timed out) may or may not have happened. If it did, our node is
there, and it stays for as long as our session lives: a holder's node holds
the lock, a waiter's blocks everyone queued behind it, and nobody would
ever delete it.

What this module guarantees: every such node is deleted as soon as the
factory is connected again, *if the session that may have made it still
lives* (an expired session's ephemeral nodes are gone already, and a path of
it may now be someone else's node). It is found by name (our lock object's
guid, or the simple lock's one path) and deleted only if its
``ephemeralOwner`` is that session. A clean-up that cannot reach ZooKeeper
either is tried again at the next reconnection.

It does not guarantee the node goes *at once*: until the connection comes
back, the lock stays blocked, as it would by a holder that is cut off.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from .support.zk_client import UNREACHABLE

log = logging.getLogger("locks.zookeeper")


class Session(Protocol):
    """What the clean-up needs of a factory (``zk_session.ZooKeeperFactory``)."""

    client: KazooClient

    def session_id(self) -> int | None: ...
    def available(self) -> bool: ...
    def call(self, request: Callable, *args, session: int | None = None, **kwargs): ...


class Orphans:
    """The nodes a factory's session may have left behind, and their clean-up."""

    def __init__(self, factory: Session) -> None:
        self.factory = factory
        self._nodes: set[tuple[str, str, int]] = set()  # (parent, match, session)
        self._guard = threading.Lock()

    @property
    def pending(self) -> bool:
        return bool(self._nodes)

    @contextmanager
    def delete_if_unanswered(self, parent: str, match: str) -> Iterator[None]:
        """Around requests that create our node: if their answer is lost, delete what
        they may have made (see ``delete_later``)."""
        session = self.factory.session_id()
        try:
            yield
        except UNREACHABLE:
            self.delete_later(parent, match, session)
            raise

    def delete_later(self, parent: str, match: str, session_id: int | None) -> None:
        """Delete our node under ``parent`` named ``match`` (or holding ``-<match>-``)
        once we are connected again, if our session still owns it."""
        if session_id is None:
            return  # never had a session: nothing can have been created
        log.warning("%s/%s may be left behind by a lost answer; deleting it once "
                    "reconnected", parent, match)
        with self._guard:
            self._nodes.add((parent, match, session_id))
        if self.factory.available():
            self.factory.client.handler.spawn(self.delete_now)

    def delete_now(self) -> None:
        """Delete every pending node that our session still owns (on a thread of its own:
        the factory spawns it when it connects)."""
        with self._guard:
            nodes, self._nodes = self._nodes, set()
        for parent, match, session_id in nodes:
            if self.factory.session_id() != session_id:
                continue  # that session ended, and its ephemeral nodes with it
            try:
                for child in self.factory.call(self.factory.client.get_children_async, parent):
                    if child == match or f"-{match}-" in child:
                        self._delete_if_owned(f"{parent}/{child}", session_id)
            except NoNodeError:
                pass
            except UNREACHABLE:
                with self._guard:
                    self._nodes.add((parent, match, session_id))  # next time

    def _delete_if_owned(self, node: str, session_id: int) -> None:
        client = self.factory.client
        stat = self.factory.call(client.exists_async, node)
        if stat is not None and stat.ephemeralOwner == session_id:
            self.factory.call(client.delete_async, node, session=session_id)
            log.info("deleted %s, left behind by a lost answer", node)
