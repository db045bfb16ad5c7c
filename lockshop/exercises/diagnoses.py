"""The mistakes the grader knows by their symptoms: when a check fails, is it one of them?

One mistake often breaks several checks, and the first to fail is seldom the
lesson about it: an owner named by ``threading.get_ident()`` first shows as a
timeout that returns True at once (C26), because the grader's threads end and
Python hands a dead thread's id to the next one. A hint about timeouts then
sends the student looking for a loop that is not there.

So each known mistake is a row of the table below: the lesson that teaches it,
the checks whose failure it can explain, and a *probe*: a small experiment the
grader runs on the student's lock from outside (two fresh threads, the key's
TTL read right after an acquire, another owner's value put in the key, three
waiters and the watches their clients hold), never a look at the student's source. When
a check fails, the rows that can explain it are probed in order (each at most
once per grading); the first whose probe shows the mistake is the cause: the
check says so, its hint becomes the cause's, and the verdict names the cause's
lesson, not the symptom's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from lockshop.exercises.grading import Background, Grading
from lockshop.exercises.registry import LOCK, Exercise
from shop.i18n import N_, _

#: The lease the probes give the student's lock: a thousandth of it is still 100 ms,
#: time enough to read it back on a busy machine, and a thousand times it is unmistakable.
PROBE_LEASE_MS = 100_000
#: How far off the lease may be before it is called the wrong unit (a factor of 1000).
UNIT_FACTOR = 100
#: What PTTL answers for a key that is not there.
NO_KEY = -2
#: How long a probe may take before the grader gives up on it (and says nothing).
PROBE_SECONDS = 20.0
#: A value no lock of the student's would write: "another owner" for the probes.
SOMEONE_ELSE = "someone-else"


@dataclass(frozen=True)
class Diagnosis:
    """A known mistake: how to show it, and what to tell the student."""

    name: str  # "recycled owner", for the tests and the reader of this table
    lesson: str  # the lesson that teaches it
    backend: str  # "redis" or "zookeeper": the servers its probe needs
    #: The first exercise that asks for what it gets wrong (no lease is asked before 2,
    #: no compare before 3): before it, the same behaviour is what is asked.
    since: int
    explains: frozenset[str]  # the checks whose failure it may be the cause of
    #: -> what the grader saw that shows the mistake, or None when it is not this one.
    probe: Callable[[Grading], str | None]
    says: str  # marked (N_), said with _(): "another thread walked in at once: ...",
    #            with %(lesson)s and %(evidence)s
    hint: str  # marked (N_), said with _(): what to change


# --- the probes ------------------------------------------------------------------------------

def lease_units(grading: Grading) -> str | None:
    """Acquire with a lease of PROBE_LEASE_MS and read the key's TTL right after each write
    the acquire sends: a thousandth of the lease is seconds given to PX, a thousand
    times it milliseconds given to EX or EXPIRE."""
    name = grading.fresh_name("probe-lease")
    key = grading.key_of(name)
    factory = grading.factory(lease_ms=PROBE_LEASE_MS, watched_key=key)
    inspector = grading.redis()
    ttls: list[int] = []

    def after(kind: str, command: str) -> None:
        if kind in ("write", "script"):
            ttls.append(inspector.pttl(key))

    factory.client.after = after
    lock = grading.take(factory, name, blocking=False)
    left = [ttl for ttl in ttls if ttl > 0]
    factory.client.after = None
    if lock is not None:
        grading.release_quietly(lock)
    if lock is not None and ttls and all(ttl == NO_KEY for ttl in ttls):
        # It said yes, yet its key was gone at each look, right after each write: a lease
        # of a few milliseconds, run out before a busy machine let the grader look.
        return _("given self.lease_ms = %(lease)s, the key your acquire set was already gone "
                 "when the grader looked right after: a lease of a few milliseconds, seconds "
                 "where PX (or PEXPIRE) wants milliseconds", lease=PROBE_LEASE_MS)
    if not left:
        return None  # no expiry at all: C09's mistake, which C09 names itself
    ttl = left[-1]
    if ttl * UNIT_FACTOR <= PROBE_LEASE_MS:
        return _("given self.lease_ms = %(lease)s, your acquire left the key a lease of "
                 "%(ttl)s ms, about a thousandth of it: seconds where PX (or PEXPIRE) wants "
                 "milliseconds", lease=PROBE_LEASE_MS, ttl=ttl)
    if ttl >= PROBE_LEASE_MS * UNIT_FACTOR:
        return _("given self.lease_ms = %(lease)s, your acquire left the key a lease of "
                 "%(ttl)s ms, about a thousand times it: milliseconds where EX (or EXPIRE) "
                 "wants seconds", lease=PROBE_LEASE_MS, ttl=ttl)
    return None


def recycled_owner(grading: Grading) -> str | None:
    """A thread takes the lock and ends; a live thread asks (it must be refused); then a
    new thread that Python gave the dead one's id asks: if it gets in, the owner is the
    thread's id."""
    name = grading.fresh_name("probe-owner")
    factory = grading.factory(lease_ms=PROBE_LEASE_MS)

    # The live thread starts first (it makes its lock at once, so that the lock's process
    # has its thread too), so that it runs on a stack (an id) of its own, and lives on
    # until the end: the only stack free for the next thread is the dead one's.
    ready, go, done = threading.Event(), threading.Event(), threading.Event()
    answer: list[bool] = []

    def live_thread() -> None:
        lock = factory.lock(name)
        ready.set()
        go.wait(PROBE_SECONDS)
        answer.append(lock.acquire(blocking=False))
        done.wait(PROBE_SECONDS)

    live = Background(live_thread)
    try:
        grading.until(lambda: ready.is_set() or live.done(), seconds=PROBE_SECONDS)
        first, dead_id = grading.try_in_new_thread(factory, name)
        go.set()
        grading.until(lambda: answer or live.done(), seconds=PROBE_SECONDS)
        if not first or not answer or answer[0]:
            return None  # it could not be taken, or it keeps nobody out: not this mistake
        reused, _ident = grading.try_in_new_thread(factory, name, dead_id)
    finally:
        go.set()
        done.set()
    if not reused:
        return None
    return _("a thread took the lock and ended without releasing it; a live thread was then "
             "refused, but the next new thread, which Python gave the dead thread's id, got "
             "in at once")


def release_ignores_owner(grading: Grading) -> str | None:
    """A takes the lock; the grader puts another owner's value in the key (as if A's lease
    had run out and B had come); A releases: is B's value still there?"""
    name = grading.fresh_name("probe-release")
    key = grading.key_of(name)
    factory = grading.factory(lease_ms=PROBE_LEASE_MS, watched_key=key)
    a = grading.take(factory, name, blocking=False)
    if a is None:
        return None
    client = grading.redis()
    kind = client.type(key).decode()
    client.delete(key)
    if kind == "hash":
        client.hset(key, SOMEONE_ELSE, 1)
    else:
        client.set(key, SOMEONE_ELSE)
    client.pexpire(key, PROBE_LEASE_MS)
    sent = len(factory.client.commands)
    Background(grading.release_quietly, a).result(PROBE_SECONDS)
    left = client.exists(key)
    client.delete(key)
    if left:
        return None
    return _("the grader put another owner's value in the key while A held it; A's release "
             "then deleted it (A sent %(commands)s)",
             commands=", ".join(factory.client.commands[sent:]) or "?")


def shared_node(grading: Grading) -> str | None:
    """Three waiters, each with a session of its own, queue behind a holder: does any path
    carry the watches of two of them or more, looked at for a while as C19 does? (The
    nodes' watches as the server lists them, the children's as the waiters' clients
    hold them.)"""
    from lockshop.exercises.checks.zookeeper_steps import Waiter, _watch_count, seen_watching
    name = grading.fresh_name("probe-node")
    held_lock = grading.take(grading.factory(), name)
    if held_lock is None:
        return None
    served: list[int] = []
    waiters = [Waiter(grading, name, number, 10, served) for number in range(3)]
    grading.until(lambda: _watch_count(grading, waiters) >= len(waiters), seconds=5)
    path, most, _total = seen_watching(grading, waiters)
    grading.release_quietly(held_lock)
    for waiter in waiters:
        waiter.job.join(15)
    if most < 2:
        return None
    return _("with 3 waiters queued behind a holder, %(count)s of them watched one path, "
             "%(path)s: whatever happens there wakes them all", count=most, path=path)


def session_as_owner(grading: Grading) -> str | None:
    """A thread of one ZooKeeper session takes the lock and lives on, holding it; another
    live thread of the same session asks, then a thread of another session: if only the
    same session's thread gets in, the lock takes "my session's node" for "mine". (The
    holder lives on so that the asker is not given its thread's id: that is C49's
    mistake, which its own probe shows.)"""
    name = grading.fresh_name("probe-session")
    factory = grading.factory()
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        lock = factory.lock(name)
        if lock.acquire(blocking=False):
            held.set()
            done.wait(PROBE_SECONDS)
            grading.release_quietly(lock)

    holder = Background(hold)
    try:
        if not grading.until(lambda: held.is_set() or holder.done(), seconds=PROBE_SECONDS) \
                or not held.is_set():
            return None
        sibling = grading.take(factory, name, blocking=False)
        stranger = grading.take(grading.factory(), name, blocking=False)
        for lock in (sibling, stranger):
            if lock is not None:
                Background(grading.release_quietly, lock).result(PROBE_SECONDS)
    finally:
        done.set()
    if sibling is None or stranger is not None:
        return None
    return _("while a thread held the lock, another thread of the same process (the same "
             "ZooKeeper session) got in at once; a thread of another session was refused")


# --- the table -------------------------------------------------------------------------------

#: Every Redis check a lock can fail (the contract's, each step's, the sale's).
REDIS_CHECKS = frozenset({"C01", "C26", "C11", "C09", "C10", "C12", "C13", "C27", "C28",
                          "C49", "C14", "C36", "C15", "C03"})

#: In the order they are tried: the first whose probe shows its mistake is the cause. The
#: lease comes first, because a lease a thousand times too short also lets a new thread in.
DIAGNOSES = (
    Diagnosis(
        "lease units", "C36", "redis", 2, REDIS_CHECKS, lease_units,
        N_("your lease is in the wrong unit: %(evidence)s (lesson %(lesson)s)"),
        N_("self.lease_ms is in milliseconds: give it to PX or PEXPIRE as it is "
                     "(SET key token NX PX lease_ms), never to EX or EXPIRE, which count "
                     "seconds; and never divide it by 1000 for PX.")),
    Diagnosis(
        "recycled owner", "C49", "redis", 1, REDIS_CHECKS, recycled_owner,
        N_("another thread walked in at once: is your owner unique (lesson "
                     "%(lesson)s)? What the grader saw: %(evidence)s"),
        N_("Name the owner with self.owner (made per thread, never reused), not with "
                     "threading.get_ident(): Python hands a dead thread's id to the next "
                     "thread, which then re-enters the dead thread's lock.")),
    Diagnosis(
        "release ignores its owner", "C11", "redis", 3, frozenset({"C12", "C27", "C03"}),
        release_ignores_owner,
        N_("your release deletes whatever is in the key, another owner's lock too "
                     "(lesson %(lesson)s): %(evidence)s"),
        N_("Release only what is yours, in one Lua script: compare the key's value "
                     "with self.token (a reentrant hash: HEXISTS your owner, count it down, "
                     "DEL at 0) and delete nothing when it is not yours.")),
    Diagnosis(
        "shared node", "C19", "zookeeper", 8, frozenset({"C20", "C38", "C02"}), shared_node,
        N_("every waiter watches the same path (lesson %(lesson)s): %(evidence)s"),
        N_("Give each waiter a node of its own (an ephemeral sequential node under "
                     "the lock's path) and let it watch only the node just ahead of its own, "
                     "never a node (or a parent) that every waiter watches.")),
)


#: The checks of exercise 12 (ZooKeeper re-entry) that an owner got wrong can fail: every
#: one whose threads end holding a lock (``take``) before new threads ask, which Python may
#: give a dead holder's id.
ZK_OWNER_CHECKS = frozenset({"C01", "C26", "C11", "C22", "C18", "C19", "C20", "C38", "C29",
                             "C27", "C02"})
DIAGNOSES += (
    Diagnosis(
        "session as owner", "C29", "zookeeper", 12, ZK_OWNER_CHECKS, session_as_owner,
        N_("your lock lets in every thread of the holder's process (lesson %(lesson)s): "
           "%(evidence)s"),
        N_("The owner is self.owner, one per thread, written as your node's data: re-enter "
           "only when the lowest node's data is your owner. Every thread of a process "
           "shares one ZooKeeper session, so a node of your session is not yet yours.")),
    Diagnosis(
        "recycled owner", "C49", "zookeeper", 12, ZK_OWNER_CHECKS, recycled_owner,
        N_("another thread walked in at once: is your owner unique (lesson "
           "%(lesson)s)? What the grader saw: %(evidence)s"),
        N_("Name the owner with self.owner (made per thread, never reused), not with "
           "threading.get_ident(): Python hands a dead thread's id to the next "
           "thread, which then re-enters the dead thread's lock.")),
)


class Diagnostician:
    """Tries the table's rows on a failed check, each probe at most once per grading."""

    def __init__(self, grading: Grading, exercise: Exercise) -> None:
        self.grading = grading
        # The probes take the student's class for a lock: a guard, a step or an election
        # has mistakes of its own.
        self.rows = [d for d in DIAGNOSES if exercise.writes == LOCK
                     and d.backend == grading.backend and d.since <= int(exercise.id)]
        self._found: dict[str, str | None] = {}

    def cause_of(self, lesson: str) -> tuple[Diagnosis, str] | None:
        """The known mistake that explains a failed check of ``lesson`` (the mistake's own
        check too: the probe then says what it saw), and what the grader saw that shows
        it; None when none does."""
        for row in self.rows:
            if lesson not in row.explains and lesson != row.lesson:
                continue
            if row.name not in self._found:
                self._found[row.name] = self._probe(row)
            if self._found[row.name]:
                return row, self._found[row.name]
        return None

    def _probe(self, row: Diagnosis) -> str | None:
        try:
            return Background(row.probe, self.grading).result(PROBE_SECONDS)
        except Exception:  # noqa: BLE001 - a probe that cannot tell says nothing
            return None
