"""Leader election (lesson C24, and C22 for the leader whose session ends), turned on a
student's ``Candidate``.

The grader stands three of the student's candidates, each on a ZooKeeper
session of its own as three shop instances would be, and reads only what
they say: ``is_leader()`` (asked every few milliseconds: never two at once,
never none for long) and ``ensure_leader()`` (the round trip the shop makes
before a leader's write). A leader's session is ended from outside, as a
long pause would end it. Then the judge is the shop itself: three instances
fire their scheduled jobs with the student's election as the job guard
``leader``, and the audit counts the fire times that ran more than once.

Graded out of process (``grader.out_of_process``), the candidates live in the lock host
(``remote_locks.RemoteCandidate``), each on a session through a proxy of the grader's
(``Grading.factory``), from which the grader reads the session it ends; the shop's
instances run as the student's user, as a lock's sale's do.
"""

from __future__ import annotations

import time
from contextlib import ExitStack

from locks import Strategy
from locks.errors import LockError
from locks.zk_fair import ZkFairFactory
from lockshop.cluster.holder import wait_until_available
from lockshop.exercises.grading import Check, Grading
from shop.config import Config
from shop.i18n import _, lazy_gettext, yes_no

CANDIDATES = 3
#: Shop instances that fire the jobs (as the jobs labs have them).
INSTANCES = 3
#: How long the grader watches the leaders, asking every ``SAMPLE_S``.
WATCH_S, SAMPLE_S = 1.0, 0.02
#: How long an election may take: a few round trips; after a session ends, its timeout.
ELECTED_S = 10.0
PASSES, REFUSED = "passes", "refused"
TOKEN = "exercise"
#: The fire times the shop's jobs run for (each expires and reminds every unpaid order).
FIRE_TIMES = 2


class Candidates:
    """``CANDIDATES`` of the student's candidates, each on a session of its own."""

    def __init__(self, grading: Grading) -> None:
        self.grading = grading
        self._stack = ExitStack()
        self.factories: list[ZkFairFactory] = []
        self.candidates: list = []

    def __enter__(self) -> Candidates:
        group = self.grading.fresh_name("election")
        strategy = Strategy(name="exercise", family="custom", summary=self.grading.spec,
                            correct_across_instances=True, factory="")
        for _number in range(CANDIDATES):
            if self.grading.host is not None:  # in the lock host, on a proxy of the grader's
                factory = self.grading.factory()
                self._stack.callback(factory.close)
                candidate = factory.candidate(group)
            else:
                factory = ZkFairFactory(strategy, self.grading.backends())
                self._stack.callback(factory.close)
                wait_until_available(factory)
                candidate = self.grading.lock_class(factory, group).start()
            self._stack.callback(_stop_quietly, candidate)
            self.factories.append(factory)
            self.candidates.append(candidate)
        return self

    def __exit__(self, *exc_info) -> None:
        self._stack.close()

    def leaders(self) -> list[int]:
        """Which candidates say they lead, by number. A campaign that died of an error
        (a TODO left, a bug) is raised here: the check then says what it was."""
        for candidate in self.candidates:
            if getattr(candidate, "failed", None) is not None:
                raise candidate.failed
        return [n for n, candidate in enumerate(self.candidates) if candidate.is_leader()]

    def one_leader(self, seconds: float = ELECTED_S) -> int | None:
        """The one leader, once there is exactly one (None if not within ``seconds``)."""
        found = self.grading.until(lambda: len(self.leaders()) == 1, seconds=seconds)
        leaders = self.leaders() if found else []
        return leaders[0] if len(leaders) == 1 else None

    def watch(self) -> tuple[int, int]:
        """The fewest and the most leaders at once, asked every ``SAMPLE_S`` for
        ``WATCH_S``."""
        counts = []
        ends = time.monotonic() + WATCH_S
        while time.monotonic() < ends:
            counts.append(len(self.leaders()))
            time.sleep(SAMPLE_S)
        return min(counts), max(counts)


def _stop_quietly(candidate) -> None:
    try:
        candidate.stop()
    except Exception:  # noqa: BLE001 - the grader's clean-up of a student's candidate
        pass


def _ensure(candidate) -> str:
    """What ``ensure_leader()`` did: passes, refused (a LockError), or the error it raised."""
    try:
        candidate.ensure_leader()
    except LockError:
        return REFUSED
    except Exception as error:  # noqa: BLE001 - a student's candidate may raise anything
        return f"{type(error).__name__}: {error}"
    return PASSES


def _said(answer: str) -> str:
    return {PASSES: _("passes"), REFUSED: _("raises LockLost")}.get(answer, answer)


# --- C24: one leader at a time -----------------------------------------------------------------

def one_leader_at_a_time(grading: Grading) -> tuple[str, bool]:
    with Candidates(grading) as group:
        leader = group.one_leader()
        if leader is None:
            return _("no single leader within %(seconds)s s: leaders %(leaders)s",
                     seconds=ELECTED_S, leaders=group.leaders()), False
        fewest, most = group.watch()
        answers = [_ensure(c) for c in group.candidates]
        confirmed = answers[leader] == PASSES and all(
            a == REFUSED for n, a in enumerate(answers) if n != leader)
        group.candidates[leader].stop()
        started = time.monotonic()
        successor = grading.until(lambda: [n for n in group.leaders() if n != leader], seconds=5)
        took = time.monotonic() - started
        after_fewest, after_most = group.watch()
    observed = _("leaders at once: between %(fewest)s and %(most)s over %(watched)s s; "
                 "ensure_leader() of the leader: %(leader)s, of the others: %(others)s; after "
                 "the leader stepped down, another led after %(took).2f s: %(successor)s, and "
                 "then between %(after_fewest)s and %(after_most)s at once",
                 fewest=fewest, most=most, watched=WATCH_S, leader=_said(answers[leader]),
                 others=", ".join(_said(a) for n, a in enumerate(answers) if n != leader),
                 took=took, successor=yes_no(successor), after_fewest=after_fewest,
                 after_most=after_most)
    return observed, (fewest == most == 1 and confirmed and bool(successor)
                      and after_fewest == after_most == 1)


# --- C22: the leader whose session ended is not the leader -------------------------------------

def expired_leader_steps_down(grading: Grading) -> tuple[str, bool]:
    with Candidates(grading) as group:
        leader = group.one_leader()
        if leader is None:
            return _("no single leader within %(seconds)s s: leaders %(leaders)s",
                     seconds=ELECTED_S, leaders=group.leaders()), False
        old = group.candidates[leader]
        before = _ensure(old)
        grading.end_session_of(group.factories[leader])
        # At once, before its client has heard: the round trip a leader makes before it acts.
        right_after = _ensure(old)
        started = time.monotonic()
        successor = grading.until(lambda: [n for n in group.leaders() if n != leader],
                                  seconds=ELECTED_S)
        took = time.monotonic() - started
        stepped_down = bool(grading.until(lambda: not old.is_leader(), seconds=ELECTED_S))
        fewest, most = group.watch()
    observed = _("ensure_leader() of the leader before its session ended: %(before)s; just "
                 "after: %(after)s; another candidate led after %(took).2f s: %(successor)s; "
                 "the old leader's is_leader() turned false: %(stepped)s; leaders at once "
                 "then: between %(fewest)s and %(most)s", before=_said(before),
                 after=_said(right_after), took=took, successor=yes_no(successor),
                 stepped=yes_no(stepped_down), fewest=fewest, most=most)
    return observed, (before == PASSES and right_after == REFUSED and bool(successor)
                      and stepped_down and fewest == most == 1)


# --- C24: the shop's jobs, once per fire time --------------------------------------------------

def jobs_run_once(grading: Grading) -> tuple[str, bool]:
    # Imported here: the launcher brings in the whole shop, which only this check needs.
    from lockshop.cluster.client import ShopClient
    from lockshop.exercises.checks.sale import StudentsCluster
    from lockshop.workshop.labs.jobs import ORDERS, place_unpaid_orders, run_jobs

    folder = grading.runtime / "jobs"
    folder.mkdir(parents=True, exist_ok=True)
    config = Config(database_url=f"sqlite:///{folder / 'shop.db'}",
                    zk_hosts=grading.students_zk_hosts(), admin_token=TOKEN,
                    election=grading.spec, job_interval_ms=0)
    # The instances run the student's election: as the student's user, where there is one.
    with StudentsCluster(config, instances=INSTANCES, runtime_dir=folder) as cluster:
        admin = ShopClient(cluster.urls[0], TOKEN, timeout=60)
        place_unpaid_orders(cluster.urls, admin, "none", job_guard="leader")
        jobs = run_jobs(admin, fire_times=FIRE_TIMES)["jobs"]
    observed = _("on %(instances)s instances: %(runs)s runs for %(fire_times)s fire times, "
                 "duplicates %(twice)s; orders expired %(expired)s of %(orders)s; stock given "
                 "back twice %(restored)s; reminders sent twice %(reminded)s",
                 instances=INSTANCES, runs=jobs["runs"], fire_times=jobs["fire_times"],
                 twice=jobs["duplicate_runs"], expired=jobs["orders_expired"], orders=ORDERS,
                 restored=jobs["stock_restored_more_than_once"],
                 reminded=jobs["duplicate_reminders"])
    return observed, (jobs["fire_times"] > 0 and jobs["duplicate_runs"] == 0
                      and jobs["orders_expired"] == ORDERS and jobs["correct"])


ELECTION = (
    Check("C24", lazy_gettext("%(candidates)s candidates stand, each on a session of its own; "
                              "the grader asks is_leader() of each every %(ms)s ms, and "
                              "ensure_leader(); then the leader steps down (stop())",
                              candidates=CANDIDATES, ms=int(SAMPLE_S * 1000)),
          lazy_gettext("exactly one leader at every moment; the server confirms it and refuses "
                       "the others; when it steps down, another leads"),
          lazy_gettext("Lead only while your node is the lowest of the group's children: "
                       "create an ephemeral sequential node, list the children, and compare. "
                       "Otherwise watch the node just ahead of yours and look again when it "
                       "goes. On stop(), delete your node, so that the next one leads at once."),
          one_leader_at_a_time),
    Check("C22", lazy_gettext("the leader's session is ended from outside (as a long pause would "
                              "end it); at once, before its client has heard, it calls "
                              "ensure_leader()"),
          lazy_gettext("ensure_leader() raises LockLost; another candidate leads; the old "
                       "leader's is_leader() turns false"),
          lazy_gettext("ensure_leader() must ask ZooKeeper, not your memory: is your node still "
                       "there, owned by your session (stat.ephemeralOwner == "
                       "self.factory.client.client_id[0]), and the lowest? If not, raise "
                       "LockLost(self.name, \"not the leader\"). When your session ends, stand "
                       "again with a new node."), expired_leader_steps_down),
    Check("C24", lazy_gettext("%(instances)s shop instances fire their scheduled jobs every "
                              "second with your election as the job guard 'leader', "
                              "%(fire_times)s times", instances=INSTANCES, fire_times=FIRE_TIMES),
          lazy_gettext("each fire time runs once in the cluster: no duplicate runs, every unpaid "
                       "order expired once"),
          lazy_gettext("Only the leader runs the jobs: if more than one instance ran a fire time, "
                       "more than one said is_leader(); if none ran, none was elected (is your "
                       "campaign started by start(), and does is_leader() answer without "
                       "waiting?)."), jobs_run_once, sale=True),
)
