"""Exercises 9, 10 and 11 on real servers: the WATCH/MULTI release (C37), the queued Redis
lock against polling (C34, C38), and Redlock over five servers (C16, C33, C17).

Each reference passes every check, the sale across three shop instances included; each
mistake fails, and the grader names the lesson it breaks. The mistakes are the project's
broken locks where it has them (``locks.redis_broken``, the polling ``RedisLock``), and
otherwise a student's, in tests/exercise_locks/.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
import redis

from lockshop import exercises
from lockshop.exercises import grader
from lockshop.exercises.grading import Grading

from test_exercises import HERE, cli, needs

pytestmark = pytest.mark.cluster

WATCH = HERE / "watch_mistakes.py"
QUEUE = HERE / "queue_mistakes.py"
REDLOCK = HERE / "redlock_mistakes.py"

#: exercise x lock -> the first broken lesson the grader names (None: it passes).
TABLE = [
    ("9", "locks.redis_watch:WatchReleaseLock", None),  # the reference
    ("9", f"{HERE / 'watch_lock.py'}:WatchLock", None),  # a student's solution
    ("9", f"{WATCH}:GivesUpOnRefusal", "C37"),
    ("9", f"{WATCH}:NoWatch", "C12"),
    ("9", f"{WATCH}:RetriesWithoutReading", "C12"),
    ("9", "locks.redis_broken:PlainDelLock", "C11"),
    ("9", "locks.redis_broken:GetThenDelLock", "C12"),
    ("10", "locks.redis_fair:FairRedisLock", None),  # the reference
    ("10", f"{HERE / 'queued_lock.py'}:QueuedLock", None),  # a student's solution
    ("10", "locks.redis_lock:RedisLock", "C34"),  # the polling lock
    ("10", f"{QUEUE}:QueuesButPolls", "C34"),
    ("10", f"{QUEUE}:ListensOnTheWrongList", "C34"),
    ("10", f"{QUEUE}:LeavesItsQueueEntry", "C38"),
    ("11", "locks.redlock:Redlock", None),  # the reference
    ("11", f"{HERE / 'majority_lock.py'}:MajorityLock", None),  # a student's solution
    ("11", f"{REDLOCK}:MajorityOfAnswers", "C16"),
    ("11", f"{REDLOCK}:SlowServers", "C33"),
    ("11", f"{REDLOCK}:ValidFromTheEnd", "C33"),
    ("11", f"{REDLOCK}:TrustsForever", "C33"),
    # When six threads split the servers' votes, its failed attempts leave keys that block
    # them all for a lease (C01 times out first, when they split); C33's own check fails
    # every time.
    ("11", f"{REDLOCK}:LeavesItsYeses", ("C01", "C33")),
]

#: The lessons each lock must fail besides the first, whatever came before.
MUST_FAIL = {f"{REDLOCK}:TrustsForever": {"C33", "C17"},
             f"{REDLOCK}:LeavesItsYeses": {"C33"},
             "locks.redis_lock:RedisLock": {"C34"}}


@pytest.mark.parametrize(("number", "lock", "first_failed"), TABLE,
                         ids=[f"{n}-{lock.rpartition(':')[2]}" for n, lock, _ in TABLE])
def test_the_grader_names_the_lesson_each_lock_breaks(number, lock, first_failed):
    needs("redis")
    exercise = exercises.find(number)
    sale = first_failed is None  # the slow check only for the locks that pass everything
    graded = grader.grade(exercise, lock, sale=sale)
    report = "\n".join(line for r in graded.results for line in r.lines())
    assert len(graded.results) == len(exercise.checks()) - (0 if sale else 1)
    if isinstance(first_failed, tuple):
        assert graded.broken_lesson in first_failed, report
    else:
        assert graded.broken_lesson == first_failed, report
    failed = {r.lesson for r in graded.results if r.failed}
    assert MUST_FAIL.get(lock, set()) <= failed, report
    if graded.first_failed:
        result = graded.first_failed
        assert result.hint and result.lesson_title and result.articles, report
        wanted = next(c for c in exercise.checks()
                      if c.lesson == result.lesson and str(c.action) == result.action)
        assert result.hint == str(wanted.hint) or result.cause, report


def test_the_new_exercises_practise_their_lessons():
    assert exercises.find("9").lessons == ("C01", "C26", "C11", "C12", "C37", "C03")
    assert set(exercises.find("10").lessons) >= {"C34", "C38", "C11", "C12"}
    assert set(exercises.find("11").lessons) >= {"C16", "C17", "C33"}
    for number in ("9", "10", "11"):
        exercise = exercises.find(number)
        # A chain of its own: none inherits the reentrant, watchdog or fencing steps.
        assert not {"C13", "C14", "C15"} & set(exercise.lessons), number
        assert exercise.checks()[-1].sale
    printed = cli("list").stdout
    assert "redlock  lessons" in printed and "C37" in printed


def test_a_lua_release_is_not_graded_on_the_watch_conflict():
    """A Lua release has no gap for WATCH to close: C37 does not apply (C12 is its check)."""
    needs("redis")
    graded = grader.grade(exercises.find("9"), "locks.redis_lock:RedisLock", sale=False)
    conflict = next(r for r in graded.results if r.lesson == "C37")
    assert not conflict.applies and graded.passed, conflict.observed


def test_a_wrong_backend_is_one_line_and_exit_2(tmp_path):
    """A single-Redis lock handed to the Redlock exercise, and a Redlock to a Redis one."""
    done = cli("check", "11", f"{HERE / 'watch_lock.py'}")
    assert done.returncode == 2 and "exercise 11 is a redlock exercise" in done.stderr, \
        done.stderr
    done = cli("check", "9", f"{HERE / 'majority_lock.py'}")
    assert done.returncode == 2 and "is a redlock lock; exercise 9 is a redis exercise" in \
        done.stderr, done.stderr


def test_redlocks_servers_are_reached_only_through_the_graders_proxies(tmp_path):
    """Exercise 11 out of process: the lock host is given a proxy for each of the five
    servers, which ask for a password it never learns; the sale's shop instances, the last
    check, are given the servers themselves, as the Redis exercises' are."""
    needs("redis")
    exercise = exercises.find("11")
    assert grader.out_of_process(exercise)
    host, spec = grader.start_host("locks.redlock:Redlock", exercise)
    try:
        with Grading(None, spec, exercise.backend, tmp_path, host=host) as grading:
            servers = grading.redis_servers
            given = grading.backends().redis_urls
            assert len(given) == len(servers) == 5
            assert not {urlsplit(url).port for url in given} & {s.port for s in servers}
            assert all(urlsplit(url).password is None for url in given)
            for server in servers:
                with pytest.raises(redis.AuthenticationError), \
                        redis.Redis(host=server.host.address, port=server.port) as straight:
                    straight.ping()
            assert grading.servers_backends().redis_urls == tuple(s.url for s in servers)
    finally:
        host.close()
