"""Exercise 14 as a student solves it: the skeleton with its TODOs filled in."""

import threading

from kazoo.exceptions import KazooException, NoNodeError

from locks import LockLost
from locks.zk_election import Candidate


def sequence(child: str) -> int:
    return int(child[-10:])


class Election(Candidate):

    def __init__(self, factory, group: str) -> None:
        super().__init__(factory, group)
        self.client = factory.client
        self.parent = f"/lockshop/exercise-election/{group}"
        self.node = None
        self.session = None
        self.leading = False

    def our_session(self):
        client_id = self.client.client_id
        return client_id[0] if client_id else None

    def _campaign(self) -> None:
        while not self._stop.is_set():
            try:
                self._stand()
            except KazooException:
                self.leading = False
                self._stop.wait(0.2)
        self._step_down()

    def _stand(self) -> None:
        if self.node is None or self.session != self.our_session():
            self.node = self.client.create(self.parent + "/candidate-", ephemeral=True,
                                           sequence=True, makepath=True)
            self.session = self.our_session()
        children = sorted(self.client.get_children(self.parent), key=sequence)
        mine = self.node.rsplit("/", 1)[1]
        if mine not in children:
            self.node = None
            return
        if children[0] == mine:
            self.leading = True
            while self.our_session() == self.session and not self._stop.wait(0.1):
                pass
            self.leading = False
            return
        gone = threading.Event()
        ahead = children[children.index(mine) - 1]
        if self.client.exists(f"{self.parent}/{ahead}", watch=lambda event: gone.set()):
            gone.wait(1.0)

    def is_leader(self) -> bool:
        return self.leading and self.session is not None and self.our_session() == self.session

    def ensure_leader(self) -> None:
        try:
            stat = self.client.exists(self.node) if self.node else None
            children = sorted(self.client.get_children(self.parent), key=sequence)
        except KazooException:
            raise LockLost(self.name, "not the leader") from None
        if (stat is None or stat.ephemeralOwner != self.our_session()
                or not children or f"{self.parent}/{children[0]}" != self.node):
            raise LockLost(self.name, "not the leader")

    def _step_down(self) -> None:
        self.leading = False
        node, self.node = self.node, None
        if node is not None and self.session == self.our_session():
            try:
                self.client.delete(node)
            except (NoNodeError, KazooException):
                pass
