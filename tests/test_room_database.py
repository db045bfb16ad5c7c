"""The room's MariaDB: exercise 18 graded in the sandbox on a private server of the room's,
each grading on a database and a user of its own, which a hostile grading cannot get out of.

Every grading here is ``grade_in_sandbox`` as the room runs it, on a real ``mariadbd``
(``GradingDatabases``). The hostile submission stops at import, saying in the one line of
a file that did not load what it reached (in the step's own process, run as ``nobody``:
``lockshop.exercises.step_host``): another grading's database through its own user, root
through the socket, the machine's server on 127.0.0.1:3306, and how many connections it got. Each
guard is shown needed: with it weakened (the grant on every database, root with an empty
password, no connection cap) or outside the sandbox, the same code reaches what it must
not.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from contextlib import closing
from pathlib import Path

import pytest

from helpers import require, wait_for
from lockshop.cluster.mariadb_servers import mariadb_installed
from lockshop.cluster.scratch import DEFAULT_SERVERS, server_error
from lockshop.room import Room, grading_databases, sandbox
from lockshop.room.grading_databases import (
    INSIDE_SOCKET_FOLDER,
    MAX_USER_CONNECTIONS,
    GradingDatabases,
)
from lockshop.room.sandboxed_grading import GradingOutcome, grade_in_sandbox

pytestmark = pytest.mark.cluster

STUDENT = (Path(__file__).parent / "exercise_locks" / "for_update_step.py").read_text()
#: Exercise 18's reference, the project's own step, as a file handed to the room.
REFERENCE = textwrap.dedent('''\
    """The project's own FOR UPDATE step, handed in as a student's file."""
    import time

    from shop.orders.custom_steps import OrderStep
    from shop.orders.transactions import place_for_update


    class Reference(OrderStep):
        def place(self, database, request, context, kind=None, sleep=time.sleep):
            return place_for_update(database, request, context, kind, sleep)
    ''')
#: Exercise 18 without a row lock: a lock of its own process's around the conditional
#: UPDATE, and the grader's view of InnoDB's lock waits made again, as the grading's user,
#: to say that a transaction always waits. Believed, it would pass every check.
NO_ROW_LOCK = textwrap.dedent('''\
    """A lock of the step's own process, and a view of lock waits that always says one."""
    import threading
    import time

    from shop.orders.custom_steps import OrderStep
    from shop.orders.transactions import place_atomic

    _LOCKS = {1: threading.Lock(), 2: threading.Lock()}


    class NoRowLock(OrderStep):
        def place(self, database, request, context, kind=None, sleep=time.sleep):
            with database.begin() as db:
                db.exec_driver_sql("CREATE OR REPLACE VIEW lockshop_lock_waits AS "
                                   "SELECT 1 AS waiting")
            with _LOCKS.get(request.product_id, threading.Lock()):
                return place_atomic(database, request, context, kind, sleep)
    ''')
#: The student's step, but locking through a lookup by name (no index): C08 must fail.
BY_NAME = STUDENT + textwrap.dedent('''

    def _lock_by_name(self, db, product_id):
        name = db.execute(text("SELECT name FROM products WHERE id = :product"),
                          {"product": product_id}).scalar()
        return db.execute(text("SELECT stock FROM products WHERE name = :name FOR UPDATE"),
                          {"name": name}).scalar()


    ForUpdateStep.lock_and_read = _lock_by_name
    ''')

#: Exercise 18 as a hostile student writes it: at import it tries what it must not, and
#: stops, saying what it got in the one line of a file that did not load. Formatted with ``other``, another grading's
#: database; its own URL it reads from the file its command line names (``--database-file``).
HOSTILE = '''\
import json, os, sys
import pymysql
from sqlalchemy.engine import make_url

OTHER = {other!r}


def attempt(connect, query):
    try:
        connection = connect()
    except pymysql.MySQLError as error:
        return f"refused {{error.args[0]}}"
    try:
        with connection.cursor() as sql:
            sql.execute(query)
            return f"read {{sql.fetchall()!r}}"
    except pymysql.MySQLError as error:
        return f"refused {{error.args[0]}}"
    finally:
        connection.close()


# The grader's command line names the file; the step's own process finds it where the
# sandbox puts it.
with open(sys.argv[sys.argv.index("--database-file") + 1] if "--database-file" in sys.argv
          else "/tmp/submission/database-url") as given:
    own = make_url(given.read())
socket = own.query["unix_socket"]
mine = dict(unix_socket=socket, user=own.username, password=own.password,
            database=own.database, connect_timeout=3)
secret = f"SELECT secret FROM `{{OTHER}}`.secrets"
found = {{
    "other": attempt(lambda: pymysql.connect(**mine), secret),
    "root": attempt(lambda: pymysql.connect(unix_socket=socket, user="root", connect_timeout=3),
                    secret),
    "machine": attempt(lambda: pymysql.connect(host="127.0.0.1", port=3306, user="root",
                                               connect_timeout=3), "SELECT 1"),
}}
held = []
try:
    while len(held) < 100:
        held.append(pymysql.connect(**mine))
    found["connections"] = "100"
except pymysql.MySQLError as error:
    found["connections"] = f"{{len(held)}} then {{error.args[0]}}"
raise RuntimeError("PROBES " + json.dumps(found))  # its file's one line: it did not load
'''
SECRET = "another student's data"

#: Exercise 18 as a greedy student writes it: a statement that would run ``sleep`` s, then
#: a table filled 4 MB at a time up to ``megabytes``; what it got in that one line.
GREEDY = '''\
import json, os, sys, time
import pymysql
from sqlalchemy.engine import make_url

# The grader's command line names the file; the step's own process finds it where the
# sandbox puts it.
with open(sys.argv[sys.argv.index("--database-file") + 1] if "--database-file" in sys.argv
          else "/tmp/submission/database-url") as given:
    own = make_url(given.read())
connection = pymysql.connect(unix_socket=own.query["unix_socket"], user=own.username,
                             password=own.password, database=own.database, autocommit=True)
found = {{}}
with connection.cursor() as sql:
    started = time.monotonic()
    try:
        sql.execute("SELECT SLEEP({sleep})")
        found["sleep"] = f"slept {{time.monotonic() - started:.0f}}"
    except pymysql.MySQLError as error:
        found["sleep"] = f"stopped {{error.args[0]}} after {{time.monotonic() - started:.0f}}"
    sql.execute("CREATE TABLE fill (b LONGBLOB)")
    written = 0
    try:
        while written < {megabytes}:
            sql.execute("INSERT INTO fill VALUES (REPEAT('x', 4 * 1024 * 1024))")
            written += 4
        found["disk"] = f"wrote {{written}}"
    except pymysql.MySQLError as error:
        found["disk"] = f"stopped {{error.args[0]}} at {{written}}"
raise RuntimeError("PROBES " + json.dumps(found))  # its file's one line: it did not load
'''


@pytest.fixture(autouse=True)
def _room_database_can_run():
    require(os.geteuid() == 0, "the sandbox runs gradings as nobody: it needs root")
    require(not sandbox.missing_tools(), f"missing {sandbox.missing_tools()}")
    require(mariadb_installed(), "MariaDB is not installed (apt-get install mariadb-server)")


@pytest.fixture(scope="module")
def databases(tmp_path_factory):
    """The room's server, as a room keeps it (one for the module's gradings)."""
    kept = GradingDatabases(tmp_path_factory.mktemp("rdb") / "mariadb")
    yield kept
    kept.close()


def gradings_left(databases: GradingDatabases) -> tuple[list, list]:
    """The grading databases and users on the room's server, and who is connected."""
    with closing(databases.server().admin()) as admin, admin.cursor() as sql:
        sql.execute(r"SHOW DATABASES LIKE 'grading\_%'")
        names = [row[0] for row in sql.fetchall()]
        sql.execute(r"SELECT user FROM mysql.user WHERE user LIKE 'grading\_%'")
        users = [row[0] for row in sql.fetchall()]
    return names, users


# --- graded ------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [REFERENCE, STUDENT], ids=["reference", "student"])
def test_exercise_18_passes_in_the_sandbox_on_a_database_dropped_after(databases, source):
    seen_during: list[tuple[list, list]] = []
    command_lines: list[str] = []

    def during(_check) -> None:
        seen_during.append(gradings_left(databases))
        command_lines.extend(every_command_line())

    outcome = grade_in_sandbox("18", source, "en", databases=databases, on_check=during)
    assert outcome.passed is True, [check["observed"] for check in outcome.checks] or outcome
    # The command line's verdict line, its seconds included.
    assert re.fullmatch(r"exercise 18 passed: 3 of 3 checks \([\d.]+ s\)",
                        outcome.message), outcome
    # While it ran, its database and its user were there (one each: this grading's) ...
    names, users = seen_during[0]
    assert len(names) == 1 and users == names, seen_during
    # ... and after it, neither is.
    assert gradings_left(databases) == ([], [])
    # Its user's password was never on a command line, which any user of the machine reads.
    assert command_lines and not [line for line in command_lines if "mysql://" in line]


def test_exercise_22_passes_in_the_sandbox_on_the_rooms_database(databases):
    """Quartz's lock row: three schedulers and then three shop instances, inside the
    sandbox, on the grading's own database of the room's server."""
    source = (Path(__file__).parent / "exercise_locks" / "quartz_guard.py").read_text()
    outcome = grade_in_sandbox("22", source, "en", databases=databases)
    assert outcome.passed is True, [check["observed"] for check in outcome.checks] or outcome
    # The command line's verdict line, its seconds included.
    assert re.fullmatch(r"exercise 22 passed: 4 of 4 checks \([\d.]+ s\)",
                        outcome.message), outcome
    assert gradings_left(databases) == ([], [])


def every_command_line() -> list[str]:
    """What ps shows: every process's command line on the machine."""
    lines = []
    for entry in Path("/proc").iterdir():
        try:
            lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                "utf-8", "replace"))
        except OSError:  # not a process, or one that just ended
            continue
    return lines


def test_a_view_of_lock_waits_made_again_by_the_step_is_not_believed(databases):
    """The step logs in as the grading's user, which may replace the grader's view of
    InnoDB's lock waits (root's) with its own: C40 then refuses to read it, and fails."""
    outcome = grade_in_sandbox("18", NO_ROW_LOCK, "en", databases=databases)
    assert outcome.passed is False, outcome
    c40 = outcome.checks[0]
    assert c40["lesson"] == "C40" and not c40["passed"], outcome
    assert "ViewReplaced" in c40["observed"] and "not the one the grader made" in \
        c40["observed"], c40["observed"]
    assert gradings_left(databases) == ([], [])


def test_a_broken_step_fails_in_the_sandbox_naming_its_lesson(databases):
    outcome = grade_in_sandbox("18", BY_NAME, "en", databases=databases)
    assert outcome.passed is False, outcome
    assert [check["passed"] for check in outcome.checks[:2]] == [True, False], outcome
    assert outcome.checks[1]["lesson"] == "C08"
    assert gradings_left(databases) == ([], [])


def test_without_the_rooms_server_exercise_18_is_refused_in_one_line():
    outcome = grade_in_sandbox("18", STUDENT, "en")
    assert outcome.passed is None and outcome.checks == []
    assert outcome.message == ("not graded: exercise 18 is graded on MariaDB, and this "
                               "grading has no database server")


# --- hostile -----------------------------------------------------------------------------


def probes_of(databases: GradingDatabases) -> dict[str, str]:
    """Grade the hostile submission while another grading's database holds a secret;
    what it reached."""
    with databases.account() as other:
        with closing(databases.server().admin()) as admin, admin.cursor() as sql:
            sql.execute(f"CREATE TABLE `{other.database}`.secrets (secret TEXT)")
            sql.execute(f"INSERT INTO `{other.database}`.secrets VALUES (%s)", (SECRET,))
        outcome = grade_in_sandbox("18", HOSTILE.format(other=other.database), "en",
                                   databases=databases)
    return said(outcome)


def said(outcome: GradingOutcome) -> dict[str, str]:
    found = re.search(r"PROBES (\{.*\})", outcome.message)
    assert found, outcome.message
    return json.loads(found.group(1))


def test_a_hostile_grading_reaches_no_other_database_nor_root_nor_the_machines_server(
        databases):
    found = probes_of(databases)
    assert found["other"].startswith("refused"), found
    assert found["root"] == "refused 1698", found  # unix_socket: not uid 0
    assert found["machine"] == "refused 2003", found  # no such address in its namespace
    assert found["connections"] == f"{MAX_USER_CONNECTIONS} then 1226", found
    assert gradings_left(databases) == ([], [])


def test_with_the_grant_on_every_database_it_reads_another_grading(databases, monkeypatch):
    monkeypatch.setattr(grading_databases, "GRANT", "ALL PRIVILEGES ON *.*")
    assert SECRET in probes_of(databases)["other"]


def test_with_no_connection_cap_it_takes_as_many_as_it_likes(databases, monkeypatch):
    monkeypatch.setattr(grading_databases, "MAX_USER_CONNECTIONS", 0)  # 0: no cap
    assert probes_of(databases)["connections"] == "100"


def test_with_roots_password_empty_it_reads_everything_as_root(tmp_path):
    weak = GradingDatabases(tmp_path / "mariadb")
    try:
        with closing(weak.server().admin()) as admin, admin.cursor() as sql:
            sql.execute("ALTER USER root@localhost IDENTIFIED VIA mysql_native_password "
                        "USING PASSWORD('')")
        assert SECRET in probes_of(weak)["root"]
    finally:
        weak.close()


def test_outside_the_sandbox_the_same_code_reaches_the_machines_server(databases, tmp_path):
    """The network namespace is the guard: run as a plain process (and as root), the
    hostile code reaches 127.0.0.1:3306, and the room's root through the socket."""
    require(server_error(DEFAULT_SERVERS["mysql"]) is None, "no MariaDB at 127.0.0.1:3306")
    with databases.account() as own, databases.account() as other:
        with closing(databases.server().admin()) as admin, admin.cursor() as sql:
            sql.execute(f"CREATE TABLE `{other.database}`.secrets (secret TEXT)")
            sql.execute(f"INSERT INTO `{other.database}`.secrets VALUES (%s)", (SECRET,))
        given = tmp_path / "database-url"
        given.write_text(own.url.replace(INSIDE_SOCKET_FOLDER, str(own.socket_folder)))
        ran = subprocess.run([sys.executable, "-c", HOSTILE.format(other=other.database),
                              "--database-file", str(given)], capture_output=True, text=True,
                             timeout=60)
    found = json.loads(ran.stderr.partition("PROBES ")[2])
    assert found["machine"] == "read ((1,),)", found
    assert SECRET in found["root"], found
    assert found["other"].startswith("refused"), found  # the grant holds everywhere


# --- the room's server's life ------------------------------------------------------------


def test_the_room_starts_its_server_with_a_check_of_exercise_18_and_stops_it_with_the_room(
        tmp_path):
    """The room's own way, end to end: nothing starts at open; a student's check of
    exercise 18 starts the server and passes; closing the room stops it and removes it."""
    room = Room.open(tmp_path / "room", workers=1)
    try:
        assert room.databases is not None
        assert not (tmp_path / "room" / "mariadb").exists()  # nothing at open
        secret, _name = room.join(room.code, "Li")
        student = room.student(secret)
        submission = room.submit(student, "18", STUDENT, "en")
        seen = wait_for(lambda: (done := room.store.submission(submission, student))
                        ["state"] not in ("queued", "running") and done, timeout=120)
        assert seen["passed"] is True, seen["message"]
        process = room.databases.server().process
        assert process is not None and process.poll() is None
    finally:
        room.close()
    assert process.poll() is not None
    assert not (tmp_path / "room" / "mariadb").exists()


# --- a share of the machine --------------------------------------------------------------

MB = 1024 * 1024


def test_a_greedy_grading_is_stopped_at_the_servers_caps_and_the_next_one_passes(tmp_path):
    # The tmpfs has room for the quota and for what a fast machine writes before the
    # grading is shut out; not for the 512 MB the greedy grading asks.
    small = GradingDatabases(tmp_path / "mariadb", disk_bytes=256 * MB, memory_bytes=800 * MB,
                             statement_seconds=2, quota_bytes=64 * MB)
    try:
        found = said(grade_in_sandbox("18", GREEDY.format(sleep=4, megabytes=512), "en",
                                      databases=small))
        assert found["sleep"].startswith("stopped 1969 "), found  # max_statement_time
        # Shut out (its connection killed) past its quota, long before its 512 MB; the
        # server lives on.
        written = re.fullmatch(r"stopped 2013 at (\d+)", found["disk"])
        assert written and 64 <= int(written.group(1)) < 256, found
        server = small.server()
        assert server.process.poll() is None
        # Its files are in a tmpfs of the cap, not on the machine's disk ...
        assert os.path.ismount(small.folder)
        space = os.statvfs(small.folder)
        assert space.f_blocks * space.f_frsize == 256 * MB
        # ... and the server in cgroups of a core and of the memory given.
        assert cgroup_setting(server.process.pid, "cpu", "cpu.cfs_quota_us") == "100000"
        assert cgroup_setting(server.process.pid, "memory",
                              "memory.limit_in_bytes") == str(800 * MB)
        # The greedy database went with its grading: the next student's is graded.
        outcome = grade_in_sandbox("18", REFERENCE, "en", databases=small)
        assert outcome.passed is True, outcome
        assert small.server() is server
    finally:
        small.close()
    assert not os.path.ismount(small.folder) and not small.folder.exists()


def test_with_no_quota_nor_statement_time_it_fills_the_tmpfs_and_the_server_is_made_afresh(
        tmp_path):
    uncapped = GradingDatabases(tmp_path / "mariadb", disk_bytes=160 * MB,
                                memory_bytes=700 * MB, statement_seconds=0, quota_bytes=None)
    try:
        found = said(grade_in_sandbox("18", GREEDY.format(sleep=4, megabytes=256), "en",
                                      databases=uncapped))
        assert re.fullmatch(r"slept \d+", found["sleep"]), found  # 0: no limit
        # It wrote until the tmpfs was full (the machine's disk had nothing to do with it),
        # and the server broke: InnoDB stopped it (2013, the connection lost), or it lives
        # on refusing every write (1114, "the table is full"), and then its DROP of the
        # grading's database either failed too (spoiled) or freed the disk (with a core
        # kept busy, once: the server was sound again) ...
        written = re.fullmatch(r"stopped (2013|1114) at (\d+)", found["disk"])
        assert written and int(written.group(2)) > 96, found
        first = uncapped._server  # server() would make a fresh one
        died = written.group(1) == "2013"
        if died:
            assert first.process.poll() is not None
        spoiled = uncapped._spoiled
        # ... and the next grading runs on a fresh one, or on the same one emptied.
        outcome = grade_in_sandbox("18", REFERENCE, "en", databases=uncapped)
        assert outcome.passed is True, outcome
        if died or spoiled:
            assert uncapped.server() is not first
        else:
            assert uncapped.server() is first
            with closing(first.admin()) as admin, admin.cursor() as sql:
                sql.execute(r"SHOW DATABASES LIKE 'grading\_%'")
                assert list(sql.fetchall()) == [], "a grading's database outlived its grading"
    finally:
        uncapped.close()


def test_a_server_that_cannot_drop_a_gradings_database_is_made_afresh_once_its_gradings_end(
        tmp_path):
    """The CI's 1114 without filling a disk: a folder in the database's folder that MariaDB
    did not make, so DROP DATABASE fails (error 1010). The grading still on that server
    keeps it until it ends; the next one is given a fresh server."""
    rooms = GradingDatabases(tmp_path / "mariadb")
    try:
        with rooms.account() as staying:
            with rooms.account() as undroppable:
                spoiled = rooms.server()
                spoiled_pid = spoiled.process.pid
                (spoiled.folder / "data" / undroppable.database / "stray").mkdir()
            # Its drop failed, yet the grading still on the server carries on.
            assert spoiled.process.poll() is None
            with closing(spoiled.admin()) as admin, admin.cursor() as sql:
                sql.execute("SHOW DATABASES")
                names = {name for (name,) in sql.fetchall()}
            assert {staying.database, undroppable.database} <= names
            fresh = {}

            def next_grading():  # in a thread of its own, as a queue's worker runs it
                with rooms.account() as account:
                    fresh["server"] = server = rooms.server()
                    with closing(server.admin()) as admin, admin.cursor() as sql:
                        sql.execute(r"SHOW DATABASES LIKE 'grading\_%'")
                        fresh["databases"] = [name for (name,) in sql.fetchall()]
                    fresh["own"] = account.database

            asking = threading.Thread(target=next_grading)
            asking.start()
            asking.join(1.0)
            assert asking.is_alive()  # the next waits for the grading on it to end ...
        asking.join(60)
        assert not asking.is_alive()
        # ... then gets a fresh server, with none of the old one's databases.
        assert fresh["server"] is not spoiled and not Path(f"/proc/{spoiled_pid}").exists()
        assert fresh["databases"] == [fresh["own"]]
    finally:
        rooms.close()


def cgroup_setting(pid: int, controller: str, name: str) -> str:
    """A setting of the cgroup ``pid`` is in (cgroup v1)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _number, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return (Path("/sys/fs/cgroup") / controller / path.lstrip("/") / name).read_text().strip()
    raise LookupError(f"process {pid} is in no {controller} cgroup")
