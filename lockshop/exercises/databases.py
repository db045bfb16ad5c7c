"""The database an exercise is graded on: a file of the grader's own, or a database of
its own on this machine's server, created for one grading and dropped after it.

An exercise whose backend is a database is graded there: the table lock (exercise 17,
``database``: SQLite, whose one writer at a time is all a lock row needs), and the order
steps, on the database their lesson needs (``mysql``: InnoDB's row locks through an index;
``postgresql``; ``sqlite``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lockshop.cluster.scratch import DEFAULT_SERVERS, scratch_database

#: Backends graded on a database, and the server each needs (None: a file).
SERVERS = {"database": None, "sqlite": None,
           "mysql": DEFAULT_SERVERS["mysql"], "postgresql": DEFAULT_SERVERS["postgresql"]}


@contextmanager
def database_for(backend: str, runtime: Path) -> Iterator[str]:
    """The URL of a database for one grading of ``backend``'s exercise; dropped after."""
    server = SERVERS[backend]
    if server is None:
        yield f"sqlite:///{runtime / 'grading.db'}"
        return
    with scratch_database(server, "lockshop_grading") as url:
        yield url
