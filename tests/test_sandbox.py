"""The room's sandbox: hostile students' locks are contained, and say so in one line.

Each hostile submission is exercise 3's skeleton with its act at import time or in
``_try_acquire``; each is graded by ``grade_in_sandbox`` as the room grades it, with
small limits so that it ends fast. While one runs, an HTTP server of the test's own
keeps answering (the machine keeps serving); and a right lock graded beside the worst of
them still passes.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

import lockshop
from lockshop.cluster.redis_servers import redis_server_binary
from lockshop.exercises.grading import CHECK_SECONDS
from lockshop.exercises.remote_locks import LOAD_SECONDS
from lockshop.room import cgroups, sandbox
from lockshop.room.sandbox import Limits
from lockshop.room.sandboxed_grading import GradingOutcome, grade_in_sandbox
from helpers import require, wait_for

pytestmark = pytest.mark.cluster

HERE = Path(__file__).parent
PROJECT = Path(lockshop.__file__).resolve().parent.parent
MB = 1 << 20
#: How many times slower than this machine the tests run: 1 here; ``sandbox check-v2``
#: runs them in a VM under software emulation and says how much slower that is. Every
#: time below (a budget, a bound on an answer) is multiplied by it, nothing else.
SLOWER = float(os.environ.get("LOCKSHOP_TEST_SLOWER", "1"))
#: Small limits: each hostile grading ends in seconds.
SMALL = Limits(memory_bytes=512 * MB, cpu_seconds=round(30 * SLOWER),
               total_cpu_seconds=8 * SLOWER, processes=128, open_files=256,
               output_bytes=256 * 1024, file_bytes=8 * MB, tmp_bytes=64 * MB,
               wall_seconds=60 * SLOWER)


@pytest.fixture(autouse=True)
def _sandbox_can_run():
    require(os.geteuid() == 0, "the sandbox runs gradings as nobody: it needs root")
    require(not sandbox.missing_tools(), f"missing {sandbox.missing_tools()}")
    require(redis_server_binary() is not None, "redis-server is not installed")


def hostile(*, at_import: str = "",
            in_acquire: str = 'raise NotImplementedError("TODO 1: SET NX PX")') -> str:
    """Exercise 3's skeleton with a hostile act; ``_release`` keeps its TODO, so the
    grader skips the sale and the grading stays short."""
    return textwrap.dedent('''\
        """Exercise 3, as a hostile student writes it."""
        import glob
        import os
        import socket
        import sys
        import time

        from locks.redis_support import RedisLockBase

        {at_import}


        class TokenLock(RedisLockBase):
            RELEASE = None

            def _try_acquire(self) -> bool:
        {in_acquire}

            def _release(self) -> None:
                raise NotImplementedError("TODO 3: run RELEASE with self.run")
        ''').format(at_import=textwrap.dedent(at_import),
                    in_acquire=textwrap.indent(textwrap.dedent(in_acquire), " " * 8))


def observed(outcome: GradingOutcome) -> str:
    """What the first check saw: where an act in ``_try_acquire`` shows what it got."""
    assert outcome.checks, outcome.message
    return outcome.checks[0]["observed"]


class Answering:
    """An HTTP server of the test's own, asked every 0.1 s while a grading runs: the
    slowest answer it gave."""

    def __init__(self) -> None:
        class Hello(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.slowest = 0.0
        self.answers = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self.server.serve_forever, daemon=True),
                         threading.Thread(target=self._ask, daemon=True)]
        for thread in self._threads:
            thread.start()

    def _ask(self) -> None:
        with requests.Session() as session:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    session.get(self.url, timeout=5).raise_for_status()
                    self.answers += 1
                    took = time.monotonic() - started
                except requests.RequestException:
                    took = 5.0
                self.slowest = max(self.slowest, took)
                self._stop.wait(0.1)

    def close(self) -> None:
        self._stop.set()
        self._threads[1].join(10)
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def answering():
    server = Answering()
    yield server
    server.close()
    # The room's own promise: `up` answers within a second throughout. A bound on a server
    # answering, generous on two shared cores; never a speed figure.
    assert server.answers > 0
    assert server.slowest < 1.0 * SLOWER, \
        f"the machine answered in {server.slowest:.2f} s at worst"


def grade(source: str, limits: Limits = SMALL, language: str = "en") -> GradingOutcome:
    return grade_in_sandbox("3", source, language, limits=limits)


# --- what it may not read ----------------------------------------------------------------

def test_a_lock_cannot_read_the_instructors_files_nor_another_students_source(tmp_path,
                                                                            answering):
    instructor = tmp_path / "instructor"
    instructor.mkdir(mode=0o700)
    token = instructor / "admin-token"
    secret = f"secret-{uuid.uuid4().hex}"
    token.write_text(secret)
    token.chmod(0o600)
    # Another student's grading, running now: its folder on this machine, found as the
    # hostile one would have to guess it.
    marker = f"# the other student's {uuid.uuid4().hex}\n"
    other_source = (marker
                    + (HERE / "exercise_locks" / "token_lock.py").read_text()
                    + "\n\nimport time\n"
                    + "while True:  # still being graded while the other looks\n"
                    + "    time.sleep(1)\n")
    before = set(Path("/tmp").glob("lockshop-grading-*"))
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        other = pool.submit(grade, other_source, Limits(**{**SMALL.__dict__,
                                                           "wall_seconds": 20.0}))

        def their_source() -> Path | None:
            """The other student's file: among the gradings begun since (other tests'
            run beside this one), the one that holds its first line."""
            for folder in set(Path("/tmp").glob("lockshop-grading-*")) - before:
                candidate = folder / "submission" / "token_lock.py"
                try:
                    if candidate.read_text().startswith(marker):
                        return candidate
                except OSError:
                    continue  # not written yet, or another grading's gone meanwhile
            return None

        their_file = wait_for(their_source, timeout=30,
                              message="the other student's file in its grading folder")
        paths = [str(token), "/etc/shadow", str(their_file),
                 str(PROJECT / ".lockshop" / "console" / "admin-token")]
        outcome = grade(hostile(in_acquire=f"""
            said = []
            for path in {paths!r}:
                try:
                    with open(path) as file:
                        said.append("LEAKED " + path + ": " + file.read(200))
                except OSError as error:
                    said.append("refused " + path + ": " + type(error).__name__)
            # The project itself is bound in, read-only, wherever it lies (a clone under
            # /tmp too): the grader's own code, not anyone's answer.
            said.append("sources=" + repr(sorted(
                found for found in glob.glob("/tmp/**/*.py", recursive=True)
                if not found.startswith({str(PROJECT) + "/"!r}))))
            said.append("gradings=" + repr(glob.glob("/tmp/lockshop-grading-*")))
            raise RuntimeError(" | ".join(said))
            """))
        assert other.result().limit == sandbox.WALL
    said = observed(outcome)
    assert outcome.passed is False and outcome.limit is None, outcome
    assert "LEAKED" not in said and secret not in said and "the other student's" not in said
    for path in paths:
        assert f"refused {path}:" in said, said
    assert "PermissionError" in said  # /etc/shadow: visible, and closed to nobody
    assert "sources=['/tmp/submission/token_lock.py']" in said, said  # its own only
    assert "gradings=[]" in said, said
    assert "exercise 3 not passed" in outcome.message and "C01" in outcome.message


# --- where it may not connect ------------------------------------------------------------

def _lan_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # UDP: picks the outgoing address, sends nothing
        return probe.getsockname()[0]


def test_a_lock_reaches_nothing_outside_its_own_loopback(answering):
    accepted: list = []
    control = socket.create_server(("0.0.0.0", 0))
    port = control.getsockname()[1]
    control.settimeout(0.2)

    def accept() -> None:
        while True:
            try:
                accepted.append(control.accept())
            except TimeoutError:
                continue
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    targets = [("127.0.0.1", 6379), ("127.0.0.1", port), (_lan_address(), port),
               ("192.0.2.1", 80)]
    try:
        outcome = grade(hostile(in_acquire=f"""
            said = []
            for host, port in {targets!r}:
                started = time.monotonic()
                try:
                    socket.create_connection((host, port), timeout=3).close()
                    said.append(f"CONNECTED {{host}}:{{port}}")
                except OSError as error:
                    took = time.monotonic() - started
                    said.append(f"{{host}}:{{port}} {{error.strerror}} after {{took:.2f}} s")
            raise RuntimeError(" | ".join(said))
            """))
    finally:
        control.close()
    said = observed(outcome)
    assert "CONNECTED" not in said and accepted == [], said
    assert f"127.0.0.1:6379 Connection refused" in said
    assert f"127.0.0.1:{port} Connection refused" in said
    assert f"{targets[2][0]}:{port} Network is unreachable after 0.0" in said, said
    assert "192.0.2.1:80 Network is unreachable after 0.0" in said, said


def test_a_zookeeper_lock_is_graded_inside_on_the_graders_own_jvm(answering):
    """The loopback is the grading's own: the ZooKeeper JVM starts and serves there."""
    from lockshop.cluster.zookeeper_servers import zookeeper_installed
    require(zookeeper_installed(), "ZooKeeper is not installed")
    outcome = grade_in_sandbox("8", (HERE / "exercise_locks" / "queue_lock.py").read_text(),
                               "en")
    assert outcome.passed is True, outcome


def test_a_lock_table_writes_the_graders_sqlite_file_as_nobody(answering):
    """Exercise 17 out of process: its lock host, holders and shop instances run as
    ``nobody`` and write the grading's SQLite file, in a folder of its own opened to them,
    where the grader reads the rows."""
    outcome = grade_in_sandbox("17", (HERE / "exercise_locks" / "lock_row.py").read_text(),
                               "en")
    assert outcome.passed is True, outcome


def test_a_leader_election_is_graded_inside_its_jobs_run_as_nobody(answering):
    """Exercise 14 out of process, in the sandbox: a right election passes, with its
    candidates in the lock host and the shop instances that fire the jobs with it started
    as ``nobody``."""
    from lockshop.cluster.zookeeper_servers import zookeeper_installed
    require(zookeeper_installed(), "ZooKeeper is not installed")
    outcome = grade_in_sandbox("14", (HERE / "exercise_locks" / "election.py").read_text(),
                               "en")
    assert outcome.passed is True, outcome



#: Run in a two-user run, as the grader's user: a listener on the walled address, then a
#: connection to it from a process of nobody's (started as the grader starts the student's
#: lock) and one of its own; each says what it got on the report channel.
TWO_USERS_ON_THE_WALLED_ADDRESS = textwrap.dedent("""
    import os, socket, subprocess, sys, time
    report = os.fdopen(int(os.environ["LOCKSHOP_REPORT_FD"]), "w", buffering=1)
    listener = socket.create_server((sys.argv[1], 0))
    port = listener.getsockname()[1]
    TRY = ("import socket, sys, time\\n"
           "started = time.monotonic()\\n"
           "try:\\n"
           "    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()\\n"
           "    print('connected')\\n"
           "except OSError as error:\\n"
           "    print(f'{error.strerror} after {time.monotonic() - started:.2f} s')\\n")
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                 "--inh-caps=-all", "--ambient-caps=-all", "--no-new-privs", "--"]
    for who, prefix in (("nobody", as_nobody), ("grader", [])):
        said = subprocess.run([*prefix, sys.executable, "-c", TRY, sys.argv[1], str(port)],
                              capture_output=True, text=True, timeout=30)
        report.write(f"{who} ({os.getuid()} started it): "
                     f"{(said.stdout or said.stderr).strip()}\\n")
    """)


def test_in_a_two_user_run_nobody_cannot_reach_the_walled_address_but_the_grader_can():
    """The wall (``sandbox.WALL_RULES``): in a run with two users, a process of nobody's
    is refused at once by a listener of the grader's on ``WALLED`` (127.0.0.2), which the
    grader's own processes reach; the machine's own firewall is left as it was."""
    require(sandbox.wall_unavailable() is None, f"no wall here: {sandbox.wall_unavailable()}")
    before = subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True).stdout
    lines: list[bytes] = []
    ran = sandbox.run([sys.executable, "-c", TWO_USERS_ON_THE_WALLED_ADDRESS, sandbox.WALLED],
                      SMALL, sandbox.python_view(), on_report=lines.append,
                      grader_user=sandbox.GRADER)
    said = b"\n".join(lines).decode()
    assert ran.returncode == 0 and ran.unwalled is None, (ran, said)
    assert f"nobody ({sandbox.GRADER} started it): Connection refused after 0.0" in said, said
    assert f"grader ({sandbox.GRADER} started it): connected" in said, said
    after = subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True).stdout
    assert "lockshop_wall" not in after and after == before


def test_where_the_wall_cannot_be_put_up_the_grading_says_so(monkeypatch):
    """No ``nft`` (or nftables refused): the run goes on without the rule, nobody reaches
    the walled address, and the student reads what the grading was not held to."""
    monkeypatch.setattr(sandbox, "wall_unavailable", lambda: "nft is not installed")
    lines: list[bytes] = []
    ran = sandbox.run([sys.executable, "-c", TWO_USERS_ON_THE_WALLED_ADDRESS, sandbox.WALLED],
                      SMALL, sandbox.python_view(), on_report=lines.append,
                      grader_user=sandbox.GRADER)
    said = b"\n".join(lines).decode()
    assert ran.unwalled == "nft is not installed"
    assert f"nobody ({sandbox.GRADER} started it): connected" in said, said
    outcome = grade("class TokenLock(:\n")
    assert outcome.message.startswith("your code did not load: "), outcome.message
    assert outcome.message.endswith("(graded WITHOUT the wall that keeps your code off the "
                                    "grader's own servers: nft is not installed)"), \
        outcome.message

# --- the limits ----------------------------------------------------------------------------

def stopped_by(limit: str) -> Limits:
    """SMALL, but with the budget of ``limit`` (the CPU time's or the wall clock's) below
    the grader's own time limits (a file's load, a check), which do not grow with SLOWER:
    in the VM, budgets forty times larger let the grader give up on the hung lock first,
    and the limit under test was never reached."""
    if limit == sandbox.CPU:  # the busy loop burns about one CPU: two checks' worth
        return Limits(**{**SMALL.__dict__,
                         "total_cpu_seconds": min(SMALL.total_cpu_seconds, 2 * CHECK_SECONDS)})
    if limit == sandbox.WALL:
        return Limits(**{**SMALL.__dict__, "wall_seconds": min(6.0 * SLOWER, LOAD_SECONDS / 2)})
    return SMALL


@pytest.mark.parametrize(("act", "limit"), [
    (dict(at_import="""
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """), sandbox.PROCESSES),
    (dict(at_import="hog = b'x' * (8 << 30)"), sandbox.MEMORY),
    (dict(in_acquire="""
        while True:
            pass
        """), sandbox.CPU),
    (dict(at_import="""
        while True:
            time.sleep(1)
        """), sandbox.WALL),
    (dict(at_import="""
        sys.stdout.write("x" * (100 << 20))
        sys.stdout.flush()
        """), sandbox.OUTPUT),
], ids=["forks-without-end", "allocates-8GB", "loops-forever", "sleeps-forever",
        "prints-100MB"])
def test_a_limit_stops_the_whole_grading_and_names_itself(act, limit, answering):
    limits = stopped_by(limit)
    outcome = grade(hostile(**act), limits)
    # Its one line and its figures, for whoever runs it with -rP (sandbox check-v2 does).
    print(f"{outcome.message} | cgroup {cgroups.hierarchy().version} | {outcome.usage} | "
          f"answered in {answering.slowest:.2f} s at worst")
    assert outcome.limit == limit, outcome
    assert outcome.passed is None
    assert outcome.message == sandbox.limit_message(limit, limits)
    assert "\n" not in outcome.message and outcome.message.startswith("stopped: ")
    assert not _cgroups_left(), "a grading's cgroup outlived it"


def _cgroups_left() -> list[Path]:
    return cgroups.hierarchy().groups_of(os.getpid())


def test_the_limits_say_one_line_each():
    limits = Limits()
    assert sandbox.limit_message(sandbox.MEMORY, limits) == \
        "stopped: used more than 1 GB of memory"
    assert sandbox.limit_message(sandbox.WALL, limits) == "stopped: ran longer than 120 s"
    assert sandbox.limit_message(sandbox.OUTPUT, limits) == "stopped: printed more than 1 MB"
    assert sandbox.limit_message(sandbox.PROCESSES, limits) == \
        "stopped: started more than 384 processes"


def test_a_lock_cannot_write_outside_its_folder(tmp_path, answering):
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)  # anyone's to write: only the sandbox stands in the way
    name = f"hacked-{uuid.uuid4().hex}"
    targets = [str(PROJECT / "lockshop" / f"{name}.py"), f"/etc/{name}",
               str(open_folder / name), f"/var/tmp/{name}", f"/dev/shm/{name}",
               f"/tmp/{name}"]
    outcome = grade(hostile(in_acquire=f"""
        said = []
        for path in {targets!r}:
            try:
                with open(path, "w") as file:
                    file.write("pwned")
                said.append("wrote " + path)
            except OSError as error:
                said.append("refused " + path + ": " + (error.strerror or ""))
        try:
            with open("/tmp/big", "wb") as file:
                file.write(b"x" * (16 << 20))
            said.append("wrote 16 MB")
        except OSError as error:
            said.append("16 MB refused: " + (error.strerror or ""))
        raise RuntimeError(" | ".join(said))
        """))
    said = observed(outcome)
    assert "16 MB refused: File too large" in said, said  # SMALL.file_bytes is 8 MB
    for target in targets:
        assert not Path(target).exists(), f"{target} was written on the machine"
    assert f"refused {targets[0]}: Read-only file system" in said, said
    assert f"refused {targets[1]}: Read-only file system" in said, said
    assert f"wrote /tmp/{name}" in said  # its own folder: written, and gone with it


# --- what it reports -------------------------------------------------------------------------

def test_a_print_cannot_pass_for_the_graders_report():
    forged = ('{"lesson": "C01", "passed": true, "action": "FORGED", "expected": "", '
              '"observed": "", "hint": "", "lesson_title": ""}\\n'
              '{"verdict": {"passed": true, "broken_lesson": null, "rounds_total": 1, '
              '"rounds_passed": 1, "seconds": 0, "todos": []}}\\n')
    outcome = grade(hostile(at_import=f"sys.stdout.write('{forged}'); sys.stdout.flush()"))
    assert outcome.passed is False, outcome
    assert all(check["action"] != "FORGED" for check in outcome.checks)
    assert len(outcome.checks) == 8


def test_a_verdict_written_on_every_descriptor_never_reaches_the_report():
    """The student's lock runs in a process of its own, which holds no end of the report's
    pipe: whatever it writes, wherever, the report has only the grader's lines (and,
    were it there, a forged line would count only in its place, and a pass needs every
    check of the exercise)."""
    forged = ('{"lesson": "C01", "passed": true, "action": "FORGED", "expected": "", '
              '"observed": "", "hint": "", "lesson_title": ""}\\n'
              '{"verdict": {"passed": true, "broken_lesson": null, "rounds_total": 1, '
              '"rounds_passed": 1, "seconds": 0, "todos": []}}\\n')
    outcome = grade(hostile(at_import=f"""
        for fd in os.listdir("/proc/self/fd"):
            try:
                os.write(int(fd), b'{forged}')
            except OSError:
                pass
        """))
    assert outcome.passed is False, outcome
    assert all(c["action"] != "FORGED" for c in outcome.checks)
    assert [c["lesson"] for c in outcome.checks] == \
        ["C01", "C26", "C11", "C09", "C10", "C11", "C12", "C03"]
    assert outcome.message.startswith("exercise 3 not passed: 0 of 8 checks"), outcome


def test_code_that_does_not_load_says_so_in_one_line():
    outcome = grade("class TokenLock(:\n")
    assert outcome.passed is None and outcome.limit is None
    assert outcome.message.startswith("your code did not load: ")
    assert "syntax error" in outcome.message and "\n" not in outcome.message


@pytest.fixture
def no_cgroups(tmp_path):
    """The sandbox's cgroups looked for in an empty folder: no grading's group can be made,
    as where a room's cgroups stopped being writable after ``up`` probed them."""
    cgroups.use(tmp_path / "no-cgroups")
    yield
    cgroups.use(cgroups.CGROUPS)


def test_a_grading_whose_limits_cannot_be_set_is_not_graded_unless_the_room_allows_it(
        no_cgroups):
    refused = grade("class TokenLock(:\n")
    assert refused.passed is None and refused.checks == [] and refused.usage is None
    assert refused.message.startswith("not graded: the instructor's machine could not set "
                                      "this grading's memory, process and total CPU time "
                                      "limits"), refused.message
    assert "no cgroup hierarchy is mounted" in refused.message
    # `up --room-without-limits`: graded, and the student reads what it was not held to.
    # Without a cgroup the process count is a per-user rlimit, shared with every grading of
    # the machine's: the suite's other workers, grading as the same users now, counted in
    # SMALL's 128 (with a core kept busy, setpriv's exec failed: "Resource temporarily
    # unavailable"). What this test asks is the message, so the count is not what stops it.
    allowed = grade_in_sandbox("3", "class TokenLock(:\n", "en",
                               limits=dataclasses.replace(SMALL, processes=4096),
                               without_limits=True)
    assert allowed.message.startswith("your code did not load: "), allowed.message
    assert "(graded WITHOUT its memory, process and total CPU time limits: no cgroup " \
           "hierarchy is mounted" in allowed.message


# --- right and wrong locks, graded in the sandbox ------------------------------------------

def test_the_reference_lock_passes_in_the_sandbox_beside_hostile_ones(answering):
    right = (HERE / "exercise_locks" / "token_lock.py").read_text()
    streamed: list[dict] = []
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        bomb = pool.submit(grade, hostile(at_import="""
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
            """))
        hog = pool.submit(grade, hostile(at_import="hog = b'x' * (8 << 30)"))
        reference = pool.submit(grade_in_sandbox, "3", right, "en", on_check=streamed.append)
        outcome = reference.result()
    assert bomb.result().limit == sandbox.PROCESSES
    assert hog.result().limit == sandbox.MEMORY
    assert outcome.passed is True, outcome
    assert outcome.limit is None
    assert [c["lesson"] for c in outcome.checks] == \
        ["C01", "C26", "C11", "C09", "C10", "C11", "C12", "C03"]
    assert streamed == outcome.checks  # each handed over as it completed
    # The command line's verdict line, its seconds included.
    assert re.fullmatch(r"exercise 3 passed: 8 of 8 checks \([\d.]+ s\)", outcome.message), \
        outcome.message


def test_a_broken_lock_fails_in_the_sandbox_naming_its_lesson():
    broken = (HERE / "exercise_locks" / "token_lock.py").read_text().replace(
        "        if not self.run(self.RELEASE, keys=[self.key], args=[self.token]):\n"
        "            raise LockLost(self.name, \"the lease expired\")",
        "        self.client.delete(self.key)  # a plain DEL: whoever holds it now")
    assert "self.client.delete" in broken
    outcome = grade_in_sandbox("3", broken, "en")
    assert outcome.passed is False and outcome.limit is None, outcome
    failed = [c for c in outcome.checks if not c["passed"]]
    assert failed[0]["lesson"] == "C11", failed
    assert "first broken lesson C11" in outcome.message
    assert failed[0]["hint"] and failed[0]["lesson_title"]
