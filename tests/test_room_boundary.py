"""The verdict is the grader's: submissions written to forge it, graded by the room through
the real sandbox, come back not passed and leave the board as it was.

Each attack is exercise 3's skeleton (one, exercise 7's: a ZooKeeper lock; one, exercise
17's: a lock table's; one, exercise 14's: a leader election; exercises 15's and 22's: job
guards; exercises 20's and 18's: order steps, on SQLite and on the room's MariaDB; one,
exercise 8's right lock, whose herd goes round the grader's ZooKeeper proxy) with a
few lines of its own, as a student who has read the grader would write it; the student's lock
runs in a process of its own as ``nobody``, the grader as a user of its own (``lockshop.room.inside``). Each submission goes through
``Room.submit`` to the board, beside a student whose ✓ was there before: that row must be
untouched, and the attacker's own row must be a ✗.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from helpers import require, wait_for
from lockshop.cluster.mariadb_servers import mariadb_installed
from lockshop.cluster.redis_servers import redis_server_binary
from lockshop.cluster.zookeeper_servers import zookeeper_installed
from lockshop.exercises import EXERCISES
from lockshop.room import Room, sandbox

pytestmark = pytest.mark.cluster

SKELETON = EXERCISES["3"].skeleton.read_text()


@pytest.fixture(autouse=True)
def _sandbox_can_run():
    require(os.geteuid() == 0, "the sandbox runs gradings as nobody: it needs root")
    require(not sandbox.missing_tools(), f"missing {sandbox.missing_tools()}")
    require(redis_server_binary() is not None, "redis-server is not installed")


@pytest.fixture()
def room(tmp_path):
    # As the room grades (in the sandbox; on its own MariaDB for exercise 18).
    opened = Room.open(tmp_path / "room", workers=1)
    honest = opened.store.join("Grace")
    opened.store.record_self_reported("Grace", "3", True, None)
    yield opened
    opened.close()


def graded(room: Room, source: str, exercise: str = "3") -> dict:
    """``source`` submitted by Mallory as ``exercise``, graded to its end: the submission as
    the room keeps it. The board must be as it was but for Mallory's own ✗."""
    before = [r for r in room.board()["results"] if r["name"] != "Mallory"]
    mallory = room.store.student(room.store.join("Mallory"))
    submission = room.submit(mallory, exercise, source, "en")
    done = wait_for(lambda: (now := room.store.submission(submission, mallory))["state"]
                    in ("done", "failed") and now, timeout=600)
    after = room.board()["results"]
    assert [r for r in after if r["name"] != "Mallory"] == before
    assert all(r["passed"] is False for r in after if r["name"] == "Mallory"), after
    assert done["passed"] is not True, done
    return done


def with_lines(code: str, *, in_acquire: str | None = None, in_release: str | None = None
               ) -> str:
    """The skeleton with ``code`` added at its end, and its acquire's TODO (its release's)
    replaced by ``in_acquire`` (``in_release``) where given."""
    source = SKELETON
    release_todo = ('        raise NotImplementedError("TODO 2 and 3: write RELEASE (compare '
                    'and delete in Lua) "\n'
                    '                                  "and run it with self.run")\n')
    assert release_todo in source
    for line, body in (('        raise NotImplementedError("TODO 1: SET self.key self.token '
                        'NX PX self.lease_ms")\n', in_acquire), (release_todo, in_release)):
        if body is not None:
            assert line in source
            source = source.replace(line, textwrap.indent(textwrap.dedent(body), " " * 8))
    return source + "\n" + textwrap.dedent(code)


#: The issue's five lines: in the grader's process they made the verdict a pass.
REWRITES_THE_RESULTS = """
    import lockshop.exercises.results as _r
    _rec = _r.CheckResult.record
    _r.CheckResult.record = lambda self: {**_rec(self), 'passed': True}
    _r.Grade.verdict_record = lambda self: {'verdict': {'passed': True, 'lesson': None}}
    """


def test_rewriting_the_results_objects_forges_nothing(room):
    source = with_lines(REWRITES_THE_RESULTS)
    assert "raise NotImplementedError" in source
    done = graded(room, source)
    assert done["state"] == "done" and len(done["checks"]) == 8
    assert not done["checks"][0]["passed"]
    assert "not written yet: TODO" in done["checks"][0]["observed"]


@pytest.mark.parametrize(("exercise", "checks"), [
    pytest.param("7", 6, id="a-zookeeper-lock"),  # its checks read the server and a proxy
    pytest.param("17", 6, id="a-lock-table"),  # its checks read the rows themselves
    pytest.param("14", 3, id="a-leader-election"),  # its candidates are asked from outside
    # A job guard: the runs are the grader's; their guard is asked (22's on the room's MariaDB).
    pytest.param("15", 4, id="a-job-guard"),
    pytest.param("22", 4, id="a-job-guard-on-mariadb"),
    # An order step: its buyers' delays are the grader's barriers, its verdict the audit
    # (SQLite) or InnoDB's lock waits and the rows (MariaDB).
    pytest.param("20", 3, id="an-order-step-on-sqlite"),
    pytest.param("18", 3, id="an-order-step-on-mariadb"),
])
def test_rewriting_the_results_objects_forges_nothing_in_other_families(room, exercise, checks):
    """The same five lines at the end of another family's skeleton: its student's code
    runs in a process of its own too."""
    require(EXERCISES[exercise].backend != "zookeeper" or zookeeper_installed(),
            "the zookeeper server is not installed")
    require(EXERCISES[exercise].backend != "mysql" or mariadb_installed(),
            "MariaDB is not installed")
    source = (EXERCISES[exercise].skeleton.read_text() + "\n"
              + textwrap.dedent(REWRITES_THE_RESULTS))
    done = graded(room, source, exercise)
    assert done["state"] == "done" and len(done["checks"]) == checks
    assert not any(check["passed"] for check in done["checks"]), done["checks"]
    assert "not written yet: TODO" in done["checks"][0]["observed"]


def test_lines_written_to_every_open_descriptor_are_not_the_report(room):
    forged = ('{"lesson": "C01", "passed": true, "action": "FORGED", "expected": "", '
              '"observed": "", "hint": "", "lesson_title": ""}\\n'
              '{"verdict": {"passed": true, "lesson": null}}\\n')
    done = graded(room, with_lines(f"""
        import os
        for _fd in os.listdir("/proc/self/fd"):
            for _attempt in range(3):
                try:
                    os.write(int(_fd), b'{forged}')
                except OSError:
                    pass
        """))
    assert done["state"] == "done"
    assert [c["action"] for c in done["checks"]].count("FORGED") == 0
    assert len(done["checks"]) == 8


def test_an_order_step_writing_to_every_descriptor_forges_nothing(room):
    """Exercise 20's skeleton, which at import and at every order writes forged check
    lines, a verdict and a step's answers to every descriptor it has (its host's channel to
    the grader among them): the checks are the grader's, and none passes."""
    forged = ('{"lesson": "C25", "passed": true, "action": "FORGED", "expected": "", '
              '"observed": "", "hint": "", "lesson_title": ""}\\n'
              '{"verdict": {"passed": true, "lesson": null}}\\n'
              '{"id": 1, "value": {"id": 1}}\\n{"id": 2, "event": "delay", "seconds": 9}\\n')
    source = EXERCISES["20"].skeleton.read_text() + "\n" + textwrap.dedent(f"""
        import os


        def _forge():
            for _fd in os.listdir("/proc/self/fd"):
                try:
                    os.write(int(_fd), b'{forged}')
                except OSError:
                    pass


        _forge()
        _place = AtomicStep.place


        def _forging_place(self, *args, **kwargs):
            _forge()
            return _place(self, *args, **kwargs)


        AtomicStep.place = _forging_place
        """)
    done = graded(room, source, "20")
    assert done["state"] == "done" and len(done["checks"]) == 3, done
    assert [c["action"] for c in done["checks"]].count("FORGED") == 0
    # (Its writes reach its own check's database too, which the grader then cannot read:
    # that check fails on it, as it would on any step that breaks its database.)
    assert not any(check["passed"] for check in done["checks"]), done["checks"]


def test_killing_or_stopping_its_parent_is_refused(room):
    done = graded(room, with_lines("""
        import os
        import signal
        _tried = []
        for _pid in [os.getppid(), *map(int, filter(str.isdigit, os.listdir("/proc")))]:
            if _pid == os.getpid():
                continue
            for _signal in (signal.SIGSTOP, signal.SIGKILL):
                try:
                    os.kill(_pid, _signal)
                    _tried.append(f"{_pid}:{_signal.name}:done")
                except OSError as error:
                    _tried.append(f"{_pid}:{_signal.name}:{error.strerror}")
        _PARENT = f"{os.getppid()} " + ", ".join(t for t in _tried
                                                 if t.startswith(f"{os.getppid()}:"))
        """, in_acquire='raise RuntimeError("tried: " + _PARENT)'))
    # The grader outlived it and graded every check; the attempt on it was refused.
    assert done["state"] == "done" and len(done["checks"]) == 8, done
    said = done["checks"][0]["observed"]
    assert "SIGKILL:Operation not permitted" in said and "SIGSTOP:Operation not permitted" \
        in said, said


def test_the_graders_memory_cannot_be_read_through_proc(room):
    done = graded(room, with_lines("""
        import os
        def _read_parent():
            said = []
            for name in ("mem", "environ", "maps"):
                try:
                    with open(f"/proc/{os.getppid()}/{name}", "rb") as f:
                        said.append(f"{name}: read {len(f.read(4096))} bytes")
                except OSError as error:
                    said.append(f"{name}: {error.strerror}")
            return "; ".join(said)
        """, in_acquire='raise RuntimeError(_read_parent())'))
    said = done["checks"][0]["observed"]
    assert "mem: Permission denied" in said and "environ: Permission denied" in said, said
    assert "maps: Permission denied" in said, said


def test_writing_on_its_redis_past_the_lock_changes_no_count(room):
    """A lock that lets everyone in, and tries the server behind the grader's back: the
    password, the settings, other clients, the keys of every check."""
    done = graded(room, with_lines("""
        def _meddle(client):
            said = []
            for command in (("CONFIG", "GET", "requirepass"), ("CONFIG", "SET", "requirepass",
                            ""), ("CLIENT", "KILL", "TYPE", "normal"), ("CLIENT", "LIST"),
                            ("ACL", "WHOAMI"), ("SHUTDOWN", "NOSAVE"), ("MONITOR",)):
                try:
                    client.execute_command(*command)
                    said.append(f"{command[0]} {command[1] if len(command) > 1 else ''}: ok")
                except Exception as error:
                    said.append(f"{command[0]}: {type(error).__name__}")
            for key in client.scan_iter("*"):
                client.set(key, "mine")
            return "; ".join(said)
        """, in_acquire="""
        self.meddled = _meddle(self.client)
        return True
        """, in_release="""
        self.client.delete(self.key)
        """))
    assert done["state"] == "done" and len(done["checks"]) == 8, done
    c01 = done["checks"][0]
    # Everyone got in at once: the grader's own counter says so.
    assert not c01["passed"] and "the counter reads" in c01["observed"], c01


def test_a_thread_that_outlives_its_release_forges_nothing(room):
    """A lock whose release leaves a thread behind, which then, as long as it lives, takes
    the key again and writes forged lines wherever it can."""
    right = (Path(__file__).parent / "exercise_locks" / "token_lock.py").read_text()
    source = right.replace(
        "    def _release(self) -> None:\n",
        "    def _release(self) -> None:\n"
        "        threading.Thread(target=_haunt, args=(self.client, self.key), daemon=True)"
        ".start()\n")
    source = source.replace("from locks import LockLost", textwrap.dedent('''\
        import os
        import threading
        import time

        from locks import LockLost

        FORGED = (b'{"verdict": {"passed": true, "lesson": null}}\\n')


        def _haunt(client, key):
            while True:
                client.set(key, "ghost", px=60000)
                for fd in os.listdir("/proc/self/fd"):
                    try:
                        os.write(int(fd), FORGED)
                    except OSError:
                        pass
                time.sleep(0.01)
        '''))
    assert "_haunt, args" in source
    done = graded(room, source)
    assert done["passed"] is not True, done


#: Exercise 8's right lock, but every waiter also watches the queue's folder, the herd
#: (lesson C19), on a client of its own to the ZooKeeper server it finds in
#: /proc/net/tcp6: not the proxy it was given, where the grader counts the children's
#: watches. The exists() watch on the node ahead, through the proxy, is the decoy the
#: count sees. Where it finds no server to reach, it watches the folder on its own client.
HERD_BEHIND_THE_PROXYS_BACK = """

    import socket as _socket

    from kazoo.client import KazooClient as _KazooClient


    def _servers_found():
        \"\"\"Every listening TCP socket of this network namespace that answers ZooKeeper's
        ruok: the grader's server (its proxies do not speak four-letter words).\"\"\"
        found = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):  # a JVM listens on IPv6's
            with open(table) as rows:
                listening = [line.split()[1] for line in rows.readlines()[1:]
                             if line.split()[3] == "0A"]
            for local in listening:
                address, port = local.split(":")
                # IPv4, or IPv4 in IPv6 (::ffff:a.b.c.d): its last four bytes.
                host = ".".join(str(b) for b in reversed(bytes.fromhex(address[-8:])))
                try:
                    with _socket.create_connection((host, int(port, 16)), timeout=1) as s:
                        s.sendall(b"ruok")
                        if s.recv(16) == b"imok":
                            found.append(f"{host}:{int(port, 16)}")
                except OSError:
                    pass
        return found


    _DIRECT = []
    _LOOKING = threading.Lock()


    def _direct_client(lock):
        \"\"\"A client of its own to the first server found, one per process; else the
        lock's own, proxied client.\"\"\"
        with _LOOKING:
            if not _DIRECT:
                _DIRECT.append(None)
                for hosts in _servers_found():
                    client = _KazooClient(hosts=hosts, timeout=5)
                    try:
                        client.start(timeout=5)
                    except Exception:
                        continue
                    _DIRECT[0] = client
                    break
        return _DIRECT[0] or lock.client


    def _herd_wait(self, seconds):
        woken = threading.Event()
        # The herd: every waiter watches the folder, woken by every change in it.
        _direct_client(self).get_children(self.parent, watch=lambda event: woken.set())
        # The decoy the grader counts: one node's watch, on the node ahead.
        if self.client.exists(f"{self.parent}/{self.ahead}", watch=lambda event: woken.set()):
            woken.wait(seconds)


    QueueLock._wait_for_release = _herd_wait
    """


def test_a_herd_watching_behind_the_proxys_back_is_seen(room):
    """Exercise 8: a lock whose waiters all watch the queue's folder (the herd), on
    sessions that go round the grader's proxy to the server found in /proc/net/tcp6, and
    the node ahead through the proxy (the decoy). The server is walled off from the
    student's user (``sandbox.WALL_RULES``): the folder's watches go through the proxy
    too, and C19 counts them. Without the wall C19 saw one session per node, and the
    grading passed."""
    require(zookeeper_installed(), "the zookeeper server is not installed")
    require(sandbox.wall_unavailable() is None, f"no wall here: {sandbox.wall_unavailable()}")
    source = ((Path(__file__).parent / "exercise_locks" / "queue_lock.py").read_text()
              + textwrap.dedent(HERD_BEHIND_THE_PROXYS_BACK))
    done = graded(room, source, "8")
    assert done["state"] == "done", done
    herd = next(check for check in done["checks"] if check["lesson"] == "C19")
    assert not herd["passed"], herd
    assert "the most sessions watching one node: 5" in herd["observed"], herd
