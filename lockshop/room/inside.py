"""``python -m lockshop.room.inside EXERCISE_ID SOURCE_FILE --lang zh_CN [--database-file F]
[--student-user UID]``: one grading, inside the sandbox (``--database-file``: a file holding
the URL of the database the room made for it, on the room's MariaDB, for an exercise graded
on one).

It grades the file with the same grader as ``lockshop exercise check`` (its own Redis or
ZooKeeper, its holder processes and, for the sale, three shop instances: all inside the
sandbox's network namespace, where nothing else is) and reports one JSON line per check
as the check completes, its texts already in the student's language: the check's whole
record (``CheckResult.record``, in ``lockshop.exercises.results``, which reads it back
too), whether it applies, its diagnosis and cause included::

    {"lesson": "C11", "passed": false, "applies": true, "action": ..., "expected": ...,
     "observed": ..., "seconds": 0.4, "hint": ..., "lesson_title": ..., "articles": [...],
     "todo": null, "cause": "C12", "diagnosis": ..., "cause_title": ..., ...}

then the verdict, ``{"verdict": {"passed": ..., "broken_lesson": ..., "rounds_total": 1,
...}}`` (``Grade.verdict_record``: the first broken lesson as the command line names it,
the diagnosed cause first); or, when the file gives no lock class,
``{"load_error": MESSAGE}``.

**The trust boundary.** With ``--student-user`` (the room passes it for every exercise the
grader grades out of process: ``lockshop.exercises.grader.out_of_process``), no process
that has run a line of the student's code decides, counts or reports anything:

- this process is the grader. It runs only the project's code, as a user of its own
  (``sandbox.GRADER``), keeping three capabilities: to start processes as another user
  and to signal them. It never imports the student's file.
- the student's lock runs in a lock host (``lockshop.exercises.lock_host``), its holders
  and its shop instances in processes of their own, all started as ``UID`` (``nobody``)
  with no capabilities and ``no_new_privs``. Another user's process is one they cannot
  signal, trace or read (``/proc/<grader>/mem``, ``environ``, ``maps``: denied), and this
  one's files are closed to them (its umask is 077).
- the report channel (``$LOCKSHOP_REPORT_FD``) is taken from the environment and made
  non-inheritable before anything starts: no process of the student's holds it. What
  they print goes to stdout and stderr, only counted.
- what the checks count is counted here: the grader's own counters and clocks, the keys
  it reads from its servers with a client of its own, the commands it sees on the wire
  through its proxies (``lockshop.cluster.wire.RedisProxy``). Every Redis of the grading
  (Redlock's five included, one proxy each) asks for a password the student's processes
  never learn, so the proxies are their only way in, and commands that would show or
  change the server are refused there. On ZooKeeper (exercises 7, 8, 12, 13) each of the
  student's sessions reaches the server through a proxy of the grader's
  (``lockshop.cluster.zookeeper_wire``), which reads its id, password and children's
  watches from the server's answers; the nodes' watches and ephemeral nodes are read from
  the server (``wchp``, ``dump``), and a session is expired by the grader on the server.
  A leader election's candidates (exercise 14) are asked the same way: each in the lock
  host, on a session through a proxy of the grader's. A job guard (exercises 15, 16, 22)
  is made, taken, checked and given back in the lock host by runs of the grader's
  (``lockshop.exercises.remote_guards``), whose jobs write to a database of the grader's
  own (on MariaDB, 22, the grading's database, whose URL the guard is given: its lock is a
  row there), and whose counts are the grader's.
  ZooKeeper asks for no password, so a wall stands in for one: the grading's server
  listens on 127.0.0.2, which the sandbox's firewall rule (``sandbox.WALL_RULES``, in
  the run's own network namespace) refuses to the student's user; every process of
  theirs is given a proxy of the grader's (one per factory, one shared by the holders and
  shop instances), so a lock written to go round its proxy, to hide its children's
  watches from C19, is refused. Where the rule cannot be put up the grading says so in
  its message (``SandboxRun.unwalled``).
  A lock table's rows (exercise 17) are read by the grader from the grading's SQLite
  file, which the student's processes write as the lock's own effect: the file and its
  folder (sticky, the file the grader's) are the one thing of the grader's opened to
  them (``lockshop.exercises.databases.students_file``).
  An order step (exercises 18 to 21) runs in a step host
  (``lockshop.exercises.step_host``), given each check's database by its URL: a SQLite
  file of the grader's opened to it as the lock table's is, or the grading's database on
  the room's MariaDB, as the grading's own user (which reaches that database alone). Its
  business delay is a call back to the grader's barrier; what it sold the grader reads
  from the database (the audit, the rows), and whether a buyer waits from InnoDB, through
  root's view of the lock waits (a view the grading's user made instead is not believed).
- what the host answers is believed as the lock's own answer: a value the lock's method
  could return (a lock that lies is a lock that behaves that way, and the checks judge
  behaviour). The host's errors are shown as text.

Every exercise is graded behind this boundary (``out_of_process``: a lock, an election, a
job guard and an order step each in a host of its own). Still outside it: a sale's audit
(the election's and the job guards': the shop's jobs on three instances; an order step's:
its exercise's last check) is read from a database its shop instances, which run the
student's code, can write.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import IO


def report_channel() -> IO[str]:
    """Where the lines go: the sandbox's report pipe, kept from the processes the grader
    starts (holders, shop instances), else stdout."""
    fd = os.environ.pop("LOCKSHOP_REPORT_FD", None)
    if fd is None or not fd.isdigit():
        return sys.stdout
    os.set_inheritable(int(fd), False)
    return os.fdopen(int(fd), "w", encoding="utf-8", buffering=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lockshop.room.inside")
    parser.add_argument("exercise")
    parser.add_argument("source")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--database-file", default=None, type=Path)
    parser.add_argument("--student-user", default=None, type=int)
    args = parser.parse_args(argv)
    channel = report_channel()
    if args.student_user is not None:
        from lockshop.exercises import remote_locks
        remote_locks.STUDENT_USER = args.student_user
        # The grading's folders are the grader's: closed to the student's user.
        os.umask(0o077)

    def send(record: dict) -> None:
        channel.write(json.dumps(record, ensure_ascii=False) + "\n")
        channel.flush()

    from locks.custom import LockClassError
    from lockshop.exercises import grader, registry
    from shop.i18n import set_language

    set_language(args.lang)
    # The grader kills and pauses holders on purpose: their clients' warnings are noise.
    for name in ("kazoo", "locks", "lockshop"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    exercise = registry.find(args.exercise)
    try:
        graded = grader.grade(exercise, args.source,
                              on_result=lambda result: send(result.record()),
                              database_url=(args.database_file.read_text(encoding="utf-8")
                                            if args.database_file else None))
    except LockClassError as error:
        send({"load_error": str(error)})
        return 2
    send(graded.verdict_record())
    return 0 if graded.passed else 1


if __name__ == "__main__":
    sys.exit(main())
