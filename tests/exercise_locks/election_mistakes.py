"""Exercise 14 as students get it wrong: each election is right but for one thing, and
the grader must name that thing's lesson. Name the class: election_mistakes.py:EveryoneLeads."""

from pathlib import Path

from locks import LockLost
from locks.custom import load_election_class

Election = load_election_class(str(Path(__file__).with_name("election.py")))


class EveryoneLeads(Election):
    """Leads once its node exists: the lowest is never compared, every candidate leads,
    and every instance runs every fire time (C24)."""

    def _stand(self) -> None:
        if self.node is None or self.session != self.our_session():
            self.node = self.client.create(self.parent + "/candidate-", ephemeral=True,
                                           sequence=True, makepath=True)
            self.session = self.our_session()
        self.leading = True
        while self.our_session() == self.session and not self._stop.wait(0.1):
            pass
        self.leading = False

    def ensure_leader(self) -> None:
        if not self.client.exists(self.node):
            raise LockLost(self.name, "not the leader")


class TrustsItsMemory(Election):
    """ensure_leader() asks its own flag, not ZooKeeper: a leader whose session has just
    ended still says it leads, and would write (C22)."""

    def ensure_leader(self) -> None:
        if not self.leading:
            raise LockLost(self.name, "not the leader")
