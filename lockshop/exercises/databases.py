"""The database an exercise is graded on: a file of the grader's own, or a database of
its own on this machine's server, created for one grading and dropped after it.

An exercise whose backend is a database is graded there: the table lock (exercise 17, on
``sqlite``, whose one writer at a time is all a lock row needs; in a file the student's
user may write, when its lock runs as that user: ``students_file``), and the order steps, on
the database their lesson needs (``mysql``: InnoDB's row locks through an index;
``postgresql``; ``sqlite``).

In the room's sandbox no server of the machine answers (it has loopback only): there the
room hands the grading a database of its own on the room's MariaDB (``given``).

A MariaDB database comes with ``LOCK_WAITS``, a view of how many of its transactions
wait for a row lock, which the grader reads (``checks/row_locks``). InnoDB tells that only
to users with the PROCESS privilege, which would also show them every other session's
statements; the view is its creator's (root's), and counts this database's sessions
alone, so a grading's own user reads it with no privilege beyond its database.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from lockshop.cluster.processes import StartError
from lockshop.cluster.scratch import DEFAULT_SERVERS, scratch_database, server_error
from shop.i18n import _
from shop.store.db import normalise_url

#: Backends graded on a database, and the server each needs (None: a file).
SERVERS = {"sqlite": None,
           "mysql": DEFAULT_SERVERS["mysql"], "postgresql": DEFAULT_SERVERS["postgresql"]}


#: The view of a MariaDB grading database's lock waits.
LOCK_WAITS = "lockshop_lock_waits"


def lock_wait_view(database: str) -> str:
    """The statement that makes ``database``'s ``LOCK_WAITS`` view (run by root)."""
    return (f"CREATE SQL SECURITY DEFINER VIEW `{database}`.{LOCK_WAITS} AS "
            "SELECT COUNT(*) AS waiting FROM information_schema.innodb_trx t "
            "JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id "
            f"WHERE t.trx_state = 'LOCK WAIT' AND p.db = '{database}'")


@contextmanager
def database_for(backend: str, runtime: Path, given: str | None = None, *,
                 for_students: bool = False) -> Iterator[str]:
    """The URL of a database for one grading of ``backend``'s exercise; dropped after.
    ``given``: the database the room made for this grading (its own to drop).
    ``for_students``: a SQLite file the student's processes, run as another user, write
    too (``students_file``)."""
    if given is not None:
        yield given
        return
    server = SERVERS[backend]
    if server is None:
        yield f"sqlite:///{students_file(runtime) if for_students else runtime / 'grading.db'}"
        return
    why = server_error(server)
    if why is not None:
        # Not in the room's sandbox (loopback only), which is given the room's database.
        raise StartError(_("no database server answers at %(url)s (%(why)s): this exercise is "
                           "graded on a database of its own there", url=server, why=why))
    with scratch_database(server, "lockshop_grading") as url:
        if backend == "mysql":
            admin = create_engine(normalise_url(server))
            try:
                with admin.begin() as connection:
                    connection.exec_driver_sql(lock_wait_view(make_url(url).database))
            finally:
                admin.dispose()
        yield url


def students_file(runtime: Path, folder_name: str = "database",
                  name: str = "grading.db") -> Path:
    """A SQLite file that the student's user can write, in a folder of its own in
    ``runtime`` (closed to that user but for this folder): SQLite writes its journal
    beside the file, so the folder is theirs to write too. The file is made here, the
    grader's, and the folder is sticky: their processes can write it but neither rename
    nor replace it (with a link to another of the grader's files, whose hot journal the
    grader's next read would roll back into it). ``folder_name`` and ``name``: another
    of them (an order step's checks make one file each, side by side)."""
    folder = runtime / folder_name
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o1777)
    path = folder / name
    path.touch()
    path.chmod(0o666)
    return path
