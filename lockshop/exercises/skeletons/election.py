"""Exercise 14: leader election on ZooKeeper, making a cluster job run once.

Article A1 (Quartz clustering, lesson C24): every shop instance runs the same
scheduler, so every fire time of a job fires on every instance, and the job
runs three times. Elect one leader instead, and let only the leader run jobs.
The election is the fair queue of exercise 8, held for as long as a session
lives (Curator's LeaderLatch, A4):

    stand:  create an EPHEMERAL SEQUENTIAL node under the group's parent;
    look:   list the children: if yours is the lowest, you lead;
    wait:   else watch the node just ahead of yours; when it goes, look again.
    lead:   until your session ends (your node goes with it: the next one leads)
            or you are stopped (delete your node: the next one leads at once).

Before the leader writes the job's work, the shop asks ``ensure_leader()``:
a leader paused past its session timeout has been replaced, and must learn
it from ZooKeeper, not from its memory (A4, Curator's warning; lesson C22).

Check it:   ./run exercise check 14 election.py
The grader stands three of your candidates, ends the leader's session, and
then runs three shop instances whose job guard 'leader' is your election.

What you may use (the base class, Candidate, in locks/zk_election.py):
    self.client     a kazoo client: .create(path, value, ephemeral=True, sequence=True,
                    makepath=True) returns the path it created; .get_children(path);
                    .exists(path, watch=callback) returns a stat (None when gone):
                    stat.ephemeralOwner is the session that made the node; .delete(path)
    self.parent     the group's candidates: "/lockshop/exercise-election/<group>"
    self.name       the election's name, for LockLost(self.name, "not the leader")
    self._stop      a threading.Event, set by stop(): self._stop.wait(s) sleeps, or less
    our_session()   the session we are on now (None while disconnected); a new session
                    after an expiry: it owns none of the old one's nodes
"""

import threading  # noqa: F401

from kazoo.exceptions import KazooException, NoNodeError  # noqa: F401

from locks import LockLost  # noqa: F401
from locks.zk_election import Candidate


def sequence(child: str) -> int:
    """A sequential node's number: ZooKeeper appends it as ten digits."""
    return int(child[-10:])


class Election(Candidate):

    def __init__(self, factory, group: str) -> None:
        super().__init__(factory, group)
        self.client = factory.client
        self.parent = f"/lockshop/exercise-election/{group}"
        self.node = None  # our candidate's node, while we stand
        self.session = None  # the session that made it
        self.leading = False

    def our_session(self):
        client_id = self.client.client_id
        return client_id[0] if client_id else None

    def _campaign(self) -> None:
        """Stand until stopped, a round at a time. ZooKeeper's errors (a lost connection,
        an expired session) only mean: we do not lead; stand again shortly."""
        while not self._stop.is_set():
            try:
                self._stand()
            except KazooException:
                self.leading = False
                self._stop.wait(0.2)
        self._step_down()

    def _stand(self) -> None:
        """One round: join (once per session), look, then lead or wait."""
        # TODO 1 (stand): if self.node is None, or self.session is not our_session() (it
        # expired, and our node went with it), create self.parent + "/candidate-" as an
        # ephemeral sequential node; keep its path in self.node and the session in
        # self.session.
        # TODO 2 (look, lead): list the children, sorted by sequence(). If ours is the
        # lowest: self.leading = True, and lead while our session is still self.session
        # and we are not stopped (self._stop.wait(0.1) in a loop); then self.leading =
        # False and return.
        # TODO 3 (wait): else watch the node just ahead of ours (exists(..., watch=)) and
        # wait for it to go, at most a second (self._stop.wait would not wake on a watch:
        # use a threading.Event); then return: the next round looks again.
        raise NotImplementedError("TODO 1, 2 and 3: stand with a sequential node, lead when "
                                  "it is the lowest, else watch the one just ahead")

    def is_leader(self) -> bool:
        """Whether we lead, without asking the server (the scheduler asks at every fire
        time)."""
        # TODO 4: we lead, and our session is still the one our node belongs to.
        raise NotImplementedError("TODO 4: is_leader: leading, on the node's own session")

    def ensure_leader(self) -> None:
        """Raise LockLost unless ZooKeeper says we still lead."""
        # TODO 5 (A4; C22): ask the server: our node exists, its stat.ephemeralOwner is
        # our_session(), and it is the lowest of the children. Otherwise, and on any
        # KazooException (an expired session answers with one), raise
        # LockLost(self.name, "not the leader").
        raise NotImplementedError("TODO 5: ensure_leader: ask ZooKeeper, not your memory")

    def _step_down(self) -> None:
        """Stopped: leave the election, so that the next candidate leads at once."""
        # TODO 6: self.leading = False; delete our node if our session still made it (a
        # NoNodeError or a KazooException: it is gone already); forget it.
        raise NotImplementedError("TODO 6: on stop, delete your node")
