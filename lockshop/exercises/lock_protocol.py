"""The lock host's protocol: how the grader drives a student's lock in a process of its own.

One stream (a socket pair the grader makes; the host finds its end's number in its
arguments), one JSON object per line, UTF-8, in both directions. Nothing but JSON's
own values crosses it (no pickles, no code), so a host written in another language
can speak it: it needs a JSON reader, threads and the lock.

The host speaks first, once its class has loaded::

    {"ready": {"class": "TokenLock", "family": "redis"}}
    {"load_error": "token_lock.py:3: syntax error ..."}     (and it exits)

then answers requests. A request names its ``id`` (the grader's, echoed in the answer),
its ``thread`` (a name the grader chose: the host runs every request of one name, in
order, in one thread of its own, made at the first; a lock's owner is the thread that
made it, as in one process) and its ``op``::

    {"id": 7, "thread": "t3", "op": "factory", "factory": "f1",
     "backends": {"redis_url": "redis://127.0.0.1:4711/0", "lease_ms": 600, ...}}
    {"id": 8, "thread": "t3", "op": "lock", "factory": "f1", "lock": "l1",
     "name": "counter-1", "timeout": 5.0}
    {"id": 8, "thread": "t3", "op": "read_lock", "factory": "f1", "lock": "l2",
     "name": "counter-1", "timeout": 5.0}                  (a read/write lock's read half)
    {"id": 9, "thread": "t3", "op": "acquire", "lock": "l1", "blocking": true,
     "timeout": null}
    {"id": 10, "thread": "t4", "op": "release", "lock": "l1"}
    {"id": 11, "thread": "t4", "op": "ensure_held", "lock": "l1"}
    {"id": 12, "thread": "t4", "op": "get", "lock": "l1", "attribute": "fencing_token"}
    {"id": 13, "thread": "t5", "op": "try_in_new_thread", "factory": "f1",
     "name": "recycled-4", "wanted_id": 140093}
    {"id": 14, "thread": "t5", "op": "close", "factory": "f1"}

A host started for a leader election (``--election``) loads a ``Candidate`` class; its
``factory`` is a ZooKeeper client (a session) for one candidate, and a candidate is
stood, asked and stopped by its own name::

    {"id": 20, "thread": "t6", "op": "candidate", "factory": "f2", "candidate": "c1",
     "group": "election-3"}                                (made, and started)
    {"id": 21, "thread": "t6", "op": "is_leader", "candidate": "c1"}
    {"id": 22, "thread": "t6", "op": "ensure_leader", "candidate": "c1"}
    {"id": 23, "thread": "t6", "op": "failed", "candidate": "c1"}
    {"id": 24, "thread": "t6", "op": "stop", "candidate": "c1"}

(``failed``: what ended the candidate's campaign, said as an error answer's ``error`` is,
or null.)

A host started for a job guard (``--guard``; ``guard_host``) loads a ``JobGuard`` class. A
``guard_state`` is what a guard is given as the shop's state, made in the host from plain
fields (the instance's name, its lease, the Redis and the database the grader names for
it); a ``guard`` is made on one as the scheduler makes it, ``Class(state, job, fire_time,
settings, clock)`` (``deciding_s``: a subclass whose ``deciding()`` takes that long, or
null), then taken, checked before a write and given back, each in the thread of the
grader's run::

    {"id": 30, "thread": "t7", "op": "guard_state", "state": "s1", "instance": "A",
     "lease_ms": 10000, "redis_url": "redis://127.0.0.1:4712/0",
     "database_url": "sqlite:////tmp/.../guard.db"}
    {"id": 31, "thread": "t7", "op": "guard", "guard": "g2", "state": "s1",
     "job": "send_reminders", "fire_time": "2026-11-29T09:40:00",
     "settings": {"strategy": "redis", "business_delay_ms": 0, ...}, "deciding_s": null}
    {"id": 32, "thread": "t7", "op": "take", "guard": "g2"}          (true: it runs)
    {"id": 33, "thread": "t7", "op": "recheck", "guard": "g2"}
    {"id": 34, "thread": "t7", "op": "give_back", "guard": "g2"}
    {"id": 35, "thread": "t8", "op": "close_state", "state": "s1"}

(``recheck``: the guard's ``ensure_held(db)``, ``db`` a transaction of the host's own on
its state's database, committed when it returns: null, or the error it raised, a
``LockLost`` when the guard is gone. The job's own transaction never crosses.)

A host started for an order step (``python -m lockshop.exercises.step_host``) loads the
step and greets as ``{"ready": {"class": "AtomicStep", "family": "order step"}}``; it is
asked to place an order on a database it reaches itself (its URL, plain: the host makes
its own engine, once per URL, and lets it go on ``forget``)::

    {"id": 30, "thread": "t8", "op": "place", "database": "sqlite:////tmp/.../check-3.db",
     "request": {"product_id": 1, "quantity": 1, "seat": null, "key": null},
     "context": {"instance": "grader", "strategy": "exercise", "business_delay_ms": 50,
                 "lock_timeout_ms": 30000},
     "kind": null}
    {"id": 31, "thread": "t2", "op": "forget", "database": "sqlite:////tmp/.../check-3.db"}

Each call of the step's business delay (the ``sleep`` it was handed) is an event line for
its request, which the grader's reader hands to that request's buyer; the step waits
until the grader's ``go`` for it, which has no answer and is handled by the host's reader
at once (the request's own thread is in the step)::

    {"id": 30, "event": "delay", "seconds": 0.05}          (host -> grader)
    {"thread": "t8", "op": "go", "place": 30}              (grader -> host)

and ``place`` is answered with the placed order's id (or null, when the step returned
nothing), or the error it raised, with the shop's error code or the database's error
number where it has one::

    {"id": 30, "value": {"id": 12}}
    {"id": 30, "error": {"type": "SoldOut", "code": "sold_out", "message": "...", ...}}
    {"id": 30, "error": {"type": "OperationalError", "errno": 1205, "message": "...", ...}}

(``try_in_new_thread``: a lock on ``name`` tried once, blocking=False, in a new thread of
the host that then ends; with ``wanted_id``, only in one the host's runtime gave that
thread id, a dead thread's: answered ``{"taken": bool, "thread_id": id}``) and one that
has no answer: the grader's thread of that name has ended, so the host ends
its own (once the requests before are done), as a thread ends in one process::

    {"thread": "t3", "op": "end_thread"}

Every other request is answered, when it is done, with its value or the error it raised::

    {"id": 9, "value": true}
    {"id": 10, "error": {"type": "LockNotOwned", "message": "...", "file": "token_lock.py",
                         "line": 31, "fields": {"name": "counter-1", "owner": "..."}}}

The grader believes an answer exactly as far as it would believe the lock's method
returning that value: it is what the lock says. What a check counts (a counter, a
time, the commands on the wire, the keys on the server; an order step's sales, read from
the database) the grader measures itself.
"""

from __future__ import annotations

import json

#: The longest line either side reads (a lock's error message is capped well below).
MAX_LINE = 64 * 1024
#: The longest error message a host sends.
MAX_MESSAGE = 2000
#: The fields of the ``locks`` errors (``LockLost.reason``...) an error answer carries
#: beside its text, so that the grader says it as it says its own locks' errors.
LOCK_ERROR_FIELDS = ("name", "reason", "timeout", "owner", "backend")
#: ``get``'s attributes: what a check reads off a lock object.
ATTRIBUTES = ("fencing_token", "token", "held", "owner")


def encode(message: dict) -> bytes:
    return (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")


def decode(line: bytes) -> dict:
    """A message, or ``ValueError`` for anything that is not one JSON object."""
    if len(line) > MAX_LINE:
        raise ValueError("line too long")
    message = json.loads(line.decode("utf-8"))
    if not isinstance(message, dict):
        raise ValueError("not an object")
    return message


def plain(value: object) -> object:
    """``value`` as JSON can say it: a scalar as it is, anything else as its text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    return str(value)
