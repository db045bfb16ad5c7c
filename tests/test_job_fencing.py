"""A job's guard fences the job's writes: a transaction strategy's row in
``job_locks`` by its fire time, a lock by its fencing token.

A run checks its guard before it commits; a pause or a slow link *after* that
check lets its lease run out, and the next fire time's run takes the guard,
reads the same unreminded order and reminds it. Then the first run's commit
arrives: the customer is reminded twice (seen once in a ten-minute soak of
pg_advisory on PostgreSQL). The check is now made in the write's own
transaction and locks the guard's row until the commit, so the next run waits
for that commit and reads it.

On PostgreSQL and MariaDB, where writers run side by side; SQLite's one writer
at a time orders the two runs anyway.
"""

from __future__ import annotations

import threading
import time
from contextlib import closing

import pytest
import redis
from sqlalchemy import event, select

from helpers import require, wait_for
from locks.redis_support import KEY_PREFIX
from lockshop.cluster.postgres_servers import PostgresServer, postgres_unavailable
from shop.jobs.guards import JobGuard
from shop.jobs.scheduler import JobScheduler
from shop.store.audit import take_audit
from shop.store.models import JobLock, utc_at


@pytest.fixture(params=[pytest.param("postgres", marks=pytest.mark.postgres),
                        pytest.param("mysql", marks=pytest.mark.mysql)])
def shared_database_url(request) -> str:
    return request.getfixturevalue(f"{request.param}_url")


def hold_the_commit_of_a_reminder(engine) -> tuple[threading.Event, threading.Event]:
    """Hold up the commit of the first transaction on ``engine`` that inserts a reminder,
    after the job's last check: (held, go on)."""
    held, go_on = threading.Event(), threading.Event()

    @event.listens_for(engine, "after_cursor_execute")
    def note_the_reminder(conn, cursor, statement, *args) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO REMINDERS"):
            conn.info["reminded"] = True

    @event.listens_for(engine, "commit")
    def hold(conn) -> None:
        if conn.info.pop("reminded", False) and not held.is_set():
            held.set()
            go_on.wait(30)

    return held, go_on


def lease_ran_out(request, strategy: str, state) -> bool:
    """Whether the send_reminders run's guard is free by its lease, as its backend says."""
    if strategy == "redis":
        server = request.getfixturevalue("redis_server")
        with closing(redis.Redis.from_url(server.url)) as client:
            return client.exists(KEY_PREFIX + "job:send_reminders") == 0
    with state.engine.connect() as db:  # a plain read: the held commit's row lock allows it
        until = db.execute(select(JobLock.locked_until)
                           .where(JobLock.job == "send_reminders")).scalar()
    return until is not None and until <= utc_at(time.time())


# The job_locks row (a transaction strategy), and a lock with a fencing token.
@pytest.mark.parametrize("strategy", ["atomic", "redis"])
def test_a_reminder_whose_commit_is_late_is_not_sent_again(request, make_app,
                                                          shared_database_url, strategy):
    servers = {"redis_url": request.getfixturevalue("redis_server").url} if (
        strategy == "redis") else {}
    # A's lease is short, to run out while its commit is held; B's is long, so that B's
    # run is stopped by nothing but the held commit (with a core kept busy, B once took
    # over 300 ms to reach its write and gave up there, not waiting for the commit).
    a, b = (make_app(shared_database_url, instance=name, lock_lease_ms=lease, **servers)
            for name, lease in (("a", 300), ("b", 30_000)))
    state_a, state_b = a.extensions["lockshop"], b.extensions["lockshop"]
    settings = state_a.change_settings(strategy=strategy, reminder_after_ms=0,
                                       job_interval_ms=1000, job_lock_at_least_ms=0)
    assert a.test_client().post("/api/orders", json={"product_id": 1}).status_code == 201
    held, go_on = hold_the_commit_of_a_reminder(state_a.engine)
    outcomes: dict[str, str] = {}

    def fire(name: str, state) -> None:
        outcomes[name] = JobScheduler(state).fire("send_reminders", utc_at(time.time()),
                                                  settings)

    run_a = threading.Thread(target=fire, args=("a", state_a))
    run_a.start()
    assert held.wait(10), "A's run never reached its commit"
    # A's 300 ms lease runs out while its commit is held up: the lock's key gone from
    # Redis, or the job's row in job_locks past its locked_until.
    wait_for(lambda: lease_ran_out(request, strategy, state_a), timeout=10,
             message="A's lease to run out")
    run_b = threading.Thread(target=fire, args=("b", state_b))  # the next fire time
    run_b.start()
    run_b.join(2)
    b_waited = run_b.is_alive()  # unfenced, B took the row, read, reminded and finished
    go_on.set()
    run_a.join(30)
    run_b.join(30)
    jobs = take_audit(state_a.sessions).jobs
    assert (jobs.reminders, jobs.duplicate_reminders) == (1, 0), (outcomes, jobs)
    assert b_waited, "the next run did not wait for the held commit"
    assert outcomes["a"] == "done", outcomes


def test_a_lock_guard_that_cannot_hand_in_its_token_lets_go_and_skips(make_app, redis_server):
    # The lock is in Redis, the token goes to the database: with the database down, the
    # run could not write, and must not sit on the lock until its lease runs out.
    require(postgres_unavailable() is None, f"cannot start PostgreSQL: {postgres_unavailable()}")
    with PostgresServer() as database:
        state = make_app(database.admin_url, redis_url=redis_server.url).extensions["lockshop"]
        settings = state.change_settings(strategy="redis", job_interval_ms=1000)
        database.stop()
        guard = JobGuard.for_settings(state, "send_reminders", utc_at(time.time()), settings,
                                      time.time)
        assert guard.take() is False
        again = state.strategies.lock_factory("redis").lock("job:send_reminders", timeout=0)
        assert again.acquire(blocking=False), "the guard kept its lock"
        again.release()
        state.engine.dispose()  # its pooled connections are to the stopped server
