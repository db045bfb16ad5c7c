"""Exercises 12 to 14 on real ZooKeeper servers: ZooKeeper re-entry, the read/write lock and
leader election. The references pass (the sale, or the shop's jobs, included), each
mutant fails on the check that forces its lesson, and the first broken lesson the grader
names is the one the table says.

Every grade here starts a ZooKeeper of its own, and three shop instances for the sale.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import hosted_student, require, wait_for
from lockshop import exercises
from lockshop.cluster.zookeeper_servers import zookeeper_installed
from lockshop.exercises import grader
from lockshop.exercises.checks import election_steps, rw_steps, zk_reentry_steps, zookeeper_steps
from lockshop.exercises.grading import Check

pytestmark = pytest.mark.cluster

HERE = Path(__file__).parent / "exercise_locks"
REENTRY, READ_WRITE, ELECTION = (zk_reentry_steps.REENTRY, rw_steps.READ_WRITE,
                                 election_steps.ELECTION)

#: exercise, lock, the first broken lesson the grader names (None: it passes), and the
#: check that must fail, forcing the mutant's own lesson (where an earlier one breaks too).
TABLE: list[tuple[str, str, str | None, Check | None]] = [
    ("12", "locks.zk_fair:ZkFairLock", None, None),  # the reference
    ("12", f"{HERE / 'reentrant_queue_lock.py'}:ReentrantQueueLock", None, None),
    ("12", f"{HERE / 'queue_lock.py'}:QueueLock", "C29", REENTRY[0]),  # exercise 8's, as is
    ("12", "locks.zk_simple:ZkSimpleLock", "C19", REENTRY[0]),  # the herd first
    ("12", "locks.zk_broken:TrustingQueueLock", "C38", None),
    # Every thread of the grader's shares its factory's session: the contract's threads
    # walk in already, and the grader names the cause (DIAGNOSES: "session as owner").
    ("12", f"{HERE / 'reentry_mistakes.py'}:SessionIsOwner", "C29", REENTRY[0]),
    ("12", f"{HERE / 'reentry_mistakes.py'}:InnerReleaseDeletes", "C27", REENTRY[1]),
    ("12", f"{HERE / 'reentry_mistakes.py'}:RemembersInMemory", "C29", REENTRY[2]),
    ("12", f"{HERE / 'reentry_mistakes.py'}:GetIdentOwner", "C49", REENTRY[3]),
    ("13", "locks.zk_rw:ZkWriteLock", None, None),  # the reference
    ("13", f"{HERE / 'rw_lock.py'}:WriteLock", None, None),
    ("13", "locks.zk_fair:ZkFairLock", "C21", READ_WRITE[0]),  # one exclusive lock
    ("13", f"{HERE / 'rw_mistakes.py'}:ReadersFirst", "C39", READ_WRITE[2]),
    ("13", f"{HERE / 'rw_mistakes.py'}:HandsOverToWriters", "C21", READ_WRITE[1]),
    ("13", f"{HERE / 'rw_mistakes.py'}:WriterWaitsForWriters", "C21", READ_WRITE[1]),
    ("14", "locks.zk_election:LeaderElection", None, None),  # the reference
    ("14", f"{HERE / 'election.py'}:Election", None, None),
    ("14", f"{HERE / 'election_mistakes.py'}:EveryoneLeads", "C24", ELECTION[2]),
    ("14", f"{HERE / 'election_mistakes.py'}:TrustsItsMemory", "C22", ELECTION[1]),
]


def needs_zookeeper() -> None:
    require(zookeeper_installed(), "the zookeeper server is not installed")


@pytest.mark.parametrize(("number", "lock", "first_failed", "must_fail"), TABLE,
                         ids=[f"{n}-{lock.rpartition(':')[2]}" for n, lock, *_ in TABLE])
def test_the_grader_names_the_lesson_a_lock_breaks(number, lock, first_failed, must_fail):
    needs_zookeeper()
    exercise = exercises.find(number)
    # The sale (or the jobs on three instances: the slow check, always the last) where the
    # row is about a lock that must pass everything, or about the sale's own lesson.
    sale = first_failed is None or must_fail is not None and must_fail.sale
    graded = grader.grade(exercise, lock, sale=sale)
    assert len(graded.results) == len(exercise.checks()) - (0 if sale else 1)
    report = "\n".join(line for r in graded.results for line in r.lines())
    assert graded.broken_lesson == first_failed, report
    if must_fail is not None:
        forced = [r for r in graded.results if r.action == str(must_fail.action)]
        assert len(forced) == 1 and forced[0].failed, report
        assert forced[0].hint == str(must_fail.hint) or forced[0].cause, report
    failed = graded.first_failed
    if failed:  # (C49 is the project's own lesson: no article has it)
        assert failed.hint and failed.lesson_title, report
        assert failed.articles or failed.cause_articles or failed.broken_lesson == "C49", report


def test_each_exercise_names_its_lessons_and_runs_its_own_chain_s_checks_only():
    reentry, read_write, election = (exercises.find(n) for n in ("12", "13", "14"))
    # 12 builds on 7 and 8 by naming their checks, not by inheriting them.
    assert len({read_write.chain, reentry.chain, election.chain, "zookeeper"}) == 4
    assert [c.lesson for c in reentry.own_checks] == [
        c.lesson for c in (*zookeeper_steps.EPHEMERAL, *zookeeper_steps.QUEUE, *REENTRY)]
    assert {"C29", "C27", "C49"} <= set(reentry.lessons)
    assert {"C21", "C39"} <= set(read_write.lessons)
    assert election.lessons == ("C24", "C22")
    # An election is no lock: no contract, and its own sale (the shop's jobs) last.
    assert election.checks() == ELECTION and election.checks()[-1].sale
    for exercise in (reentry, read_write):
        lessons = [c.lesson for c in exercise.checks()]
        assert lessons[:3] == ["C01", "C26", "C11"] and lessons[-1] == "C02"
    assert all(e.backend == "zookeeper" for e in (reentry, read_write, election))


def test_a_lock_is_refused_as_an_election_and_a_redis_lock_as_a_zookeeper_one(tmp_path):
    from locks.custom import LockClassError
    with pytest.raises(LockClassError, match="has no leader election class"):
        grader.resolve(f"{HERE / 'rw_lock.py'}", exercises.find("14"))
    with pytest.raises(LockClassError, match="is a redis lock; exercise 13 is a zookeeper"):
        grader.resolve("locks.redis_lock:RedisLock", exercises.find("13"))


def test_a_read_write_lock_from_a_file_gives_its_readers_the_read_half():
    from locks.custom import factory_for, load_lock_class
    write = load_lock_class(str(HERE / "rw_lock.py"))  # two classes; the read half is not one
    assert write.__name__ == "WriteLock"
    factory, requires = factory_for(write)
    assert requires == ("zookeeper",) and factory.shared_reads
    assert not factory_for(load_lock_class("locks.zk_fair:ZkFairLock"))[0].shared_reads


def test_the_shop_runs_the_election_its_config_names(tmp_path):
    """Config.election: the job guard 'leader' stands with the class from the file."""
    needs_zookeeper()
    from lockshop.cluster.zookeeper_servers import ZooKeeperServer
    from shop.app import create_app
    from shop.config import Config

    with ZooKeeperServer(tmp_path, "zookeeper") as server:
        config = Config(database_url=f"sqlite:///{tmp_path / 'shop.db'}",
                        zk_hosts=server.address, election=f"{HERE / 'election.py'}",
                        job_interval_ms=0)
        state = create_app(config).extensions["lockshop"]
        election = state.leader_election()
        try:
            assert type(election).__name__ == "Election"
            assert type(election).__module__.startswith("lockshop_custom_")
            wait_for(election.is_leader, timeout=10)
            election.ensure_leader()
        finally:
            election.stop()
            state.strategies.close()


def test_a_zookeeper_lock_is_graded_in_a_process_of_its_own(tmp_path):
    """Exercises 7, 8, 12 and 13 out of process: the student's file is loaded in the lock
    host, never in the grader; each factory reaches ZooKeeper through a proxy of the
    grader's, from which the grader learns its session (the server names it the owner of
    the lock's node) and ends it, without the lock's process saying anything."""
    needs_zookeeper()
    from locks import LockLost
    from lockshop.exercises.grading import Grading

    assert all(grader.out_of_process(exercises.find(n)) for n in ("7", "8", "12", "13"))
    exercise = exercises.find("7")
    with hosted_student(tmp_path, exercise, "locks.zk_simple", "ZkSimpleLock") as (
            host, spec), Grading(None, spec, exercise.backend, tmp_path / "runtime",
                                 host=host) as grading:
        factory = grading.factory()
        assert factory.client.address != grading.zookeeper.address
        lock = grading.take(factory, "mine")
        session = grading.session_of(factory)
        # The server lists the session the proxy read as the owner of the lock's node.
        assert zookeeper_steps.ephemerals(grading).get(session)
        grading.expire_session(factory)
        assert session not in zookeeper_steps.ephemerals(grading)
        assert grading.session_of(factory) not in (None, session)
        with pytest.raises(LockLost):
            grading.in_thread(lock.ensure_held)


def test_a_leader_election_is_graded_in_a_process_of_its_own(tmp_path):
    """Exercise 14 out of process: the student's candidates live in the lock host, never in
    the grader, each on a session through a proxy of the grader's; the grader learns the
    leader's session there (the server names it the owner of the leader's node), ends it,
    and the candidate's own ensure_leader() then refuses."""
    needs_zookeeper()
    from locks import LockLost
    from lockshop.exercises.grading import Grading

    exercise = exercises.find("14")
    assert grader.out_of_process(exercise)
    with hosted_student(tmp_path, exercise, "locks.zk_election", "LeaderElection") as (
            host, spec), Grading(None, spec, exercise.backend, tmp_path / "runtime",
                                 host=host) as grading:
        factory = grading.factory()
        assert factory.client.address != grading.zookeeper.address
        candidate = factory.candidate("mine")
        wait_for(candidate.is_leader, timeout=10)
        candidate.ensure_leader()
        session = grading.session_of(factory)
        assert zookeeper_steps.ephemerals(grading).get(session)
        grading.end_session_of(factory)
        with pytest.raises(LockLost):
            candidate.ensure_leader()
        assert candidate.failed is None
        candidate.stop()
