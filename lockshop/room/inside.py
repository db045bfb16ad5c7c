"""``python -m lockshop.room.inside EXERCISE_ID SOURCE_FILE --lang zh_CN [--database-file F]``:
one grading, inside the sandbox (``--database-file``: a file holding the URL of the database
the room made for it, on the room's MariaDB, for an exercise graded on one).

It grades the file with the same grader as ``lockshop exercise check`` (its own Redis or
ZooKeeper, its holder processes and, for the sale, three shop instances: all inside the
sandbox's network namespace, where nothing else is) and reports one JSON line per check
as the check completes, its texts already in the student's language
(``CheckResult.record``, in ``lockshop.exercises.results``, which reads it back too)::

    {"lesson": "C11", "passed": false, "action": ..., "expected": ..., "observed": ...,
     "hint": ..., "lesson_title": ...}

then ``{"verdict": {"passed": ..., "lesson": ...}}`` (the first broken lesson, or null);
or, when the file gives no lock class, ``{"error": "load", "message": ...}``.

The lines go to the pipe the sandbox hands over in ``$LOCKSHOP_REPORT_FD`` (stdout when
run by hand), not to stdout: what the student's code prints goes to stdout and stderr,
where it is only counted, so a ``print`` cannot pass for a check. (Code that rewrites
the grader in its own process could still lie: ``sandboxed_grading`` believes a line
only as far as it is well formed.)
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
        send({"error": "load", "message": str(error)})
        return 2
    send(graded.verdict_record())
    return 0 if graded.passed else 1


if __name__ == "__main__":
    sys.exit(main())
