"""The Redis lessons, turned on a student's lock: each step as the labs stage it.

A holder that must die is a process of its own (``lockshop.cluster.holder``),
killed with SIGKILL or stopped with SIGSTOP; a window between two commands is
found by watching the lock's commands on the wire (``lockshop.cluster.wire``)
and stepping in right after the first one, never by asking the student's
code where its window is.
"""

from __future__ import annotations

import signal
import threading
import time

from locks import LockLost
from lockshop.cluster.holder import held
from lockshop.exercises.grading import (
    Background,
    Check,
    Grading,
    NotApplicable,
    inner_release_verdict,
    release_said,
)
from lockshop.cluster.wire import SCRIPTS
from shop.i18n import _, lazy_gettext, yes_no


# --- C09, C10: a holder that dies --------------------------------------------------------

def _ttl(grading: Grading, name: str) -> str:
    ttl = grading.redis().pttl(grading.key_of(name))
    if ttl == -2:
        return _("no key")
    if ttl == -1:
        return _("a key with no expiry")
    return _("a key expiring in %(ms)s ms", ms=ttl)


def killed_in_section(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("killed")
    problem = grading.holder_killed(name)
    if problem:
        return problem, False
    left = _ttl(grading, name)
    waited = grading.next_owner_waits(name)
    if waited is None:
        return _("after the kill: %(left)s; nobody got the lock in %(seconds)s s", left=left,
                 seconds=grading.patience()), False
    return _("after the kill: %(left)s; the next owner got in after %(waited).2f s", left=left,
             waited=waited), True


def crash_after_first_write(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("crashed")
    holder = grading.start_holder(name, "--crash-after-first-write")
    said = grading.first_line(holder)
    grading.stop_holder(holder)
    where = _("right after its first write of the key") \
        if holder.returncode == -signal.SIGKILL and not held(said) \
        else _("after it acquired")
    left = _ttl(grading, name)
    waited = grading.next_owner_waits(name)
    if waited is None:
        return _("the holder died %(where)s, leaving %(left)s; nobody got the lock in "
                 "%(seconds)s s", where=where, left=left, seconds=grading.patience()), False
    return _("the holder died %(where)s, leaving %(left)s; the next owner got in after "
             "%(waited).2f s", where=where, left=left, waited=waited), True


# --- C11, C12: releasing another's lock -------------------------------------------------------

def _snapshot(grading: Grading, name: str):
    """What the lock's key holds now (a string's value, a hash's fields), or None."""
    client, key = grading.redis(), grading.key_of(name)
    kind = client.type(key).decode()
    return {"string": lambda: client.get(key), "hash": lambda: client.hgetall(key)}.get(
        kind, lambda: None)()


def late_release(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("late")
    a = grading.take(grading.factory(lease_ms=5000), name)
    if a is None:
        return _("A could not take the free lock"), False
    # A's lease runs out now (a watchdog would keep renewing it: as if A were paused).
    grading.redis().pexpire(grading.key_of(name), 1)
    expired = grading.until(lambda: grading.redis().exists(grading.key_of(name)) == 0,
                            seconds=3)
    if not expired:
        return _("A's lease never ran out: %(left)s", left=_ttl(grading, name)), False
    b = grading.take(grading.factory(lease_ms=5000), name)
    if b is None:
        return _("B could not take the lock after A's lease ran out"), False
    b_had = _snapshot(grading, name)
    a_said = grading.in_thread(release_said, a)
    b_has = _snapshot(grading, name)
    grading.in_thread(release_said, b)
    if b_has != b_had:
        return _("A's release %(said)s, and B's lock is gone: A deleted it", said=a_said), False
    return _("A's release %(said)s; B's lock is still there", said=a_said), True


def window_in_release(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("window")
    factory = grading.factory(lease_ms=5000, watched_key=grading.key_of(name))
    a = grading.take(factory, name)
    if a is None:
        return _("A could not take the free lock"), False
    paused, go = pause_after_first_read(factory.client)
    acquired_with = len(factory.client.commands)
    releasing = Background(grading.release_quietly, a, LockLost)
    grading.until(lambda: paused.is_set() or releasing.done(), seconds=10)
    if not paused.is_set():
        releasing.result(10)
        sent = factory.client.commands[acquired_with:]
        if any(command in SCRIPTS for command in sent):
            return _("A's release compared and deleted in one script: no window to step into "
                     "(it sent %(commands)s)", commands=", ".join(sent)), True
        # Nothing read, nothing compared: there is no gap because there is no check at
        # all. That is C11's mistake, not a pass of this one.
        return _("A's release never read the key (it sent %(commands)s): it does not compare "
                 "at all, so there is no gap to test here", commands=", ".join(sent) or "-"), \
            NotApplicable(see="C11")
    # A read the key and is about to delete it. Its lease runs out now, and B comes.
    grading.redis().delete(grading.key_of(name))
    b = grading.take(grading.factory(lease_ms=5000), name)
    b_in = b is not None
    b_had = _snapshot(grading, name)
    go.set()
    releasing.result(10)
    b_has = _snapshot(grading, name)
    if b_in:
        grading.in_thread(release_said, b)
    if not b_in:
        return _("B could not take the lock after A's lease ran out"), False
    if b_has != b_had:
        return _("paused after its read, A then deleted the key: B's lock is gone (A sent "
                 "%(commands)s)", commands=", ".join(factory.client.commands)), False
    return _("paused after its read, A's release then left B's lock alone"), True


def pause_after_first_read(client) -> tuple[threading.Event, threading.Event]:
    """Stop whoever sends the first read of the watched key, right after its answer:
    ``paused`` is set then, and it goes on when ``go`` is (or after ten seconds)."""
    paused, go = threading.Event(), threading.Event()

    def after(kind: str, command: str) -> None:
        if kind == "read" and not paused.is_set():
            paused.set()
            go.wait(10)

    client.after = after
    return paused, go



# --- C13, C27, C28, C49: re-entry --------------------------------------------------------------

def reenters(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("reenter")
    factory = grading.factory(lease_ms=5000)

    def holder_asks_again() -> tuple[bool, bool, float]:
        outer, inner = factory.lock(name), factory.lock(name, timeout=0.3)
        outer.acquire()
        started = time.monotonic()
        again = inner.acquire()
        waited = time.monotonic() - started
        other = grading.in_thread(lambda: factory.lock(name).acquire(blocking=False))
        if again:
            inner.release()
        outer.release()
        return again, other, waited

    again, other, waited = grading.in_thread(holder_asks_again)
    return (_("asked again: %(again)s after %(waited).2f s; another owner got in: %(other)s",
              again=yes_no(again), waited=waited, other=yes_no(other)),
            again and waited < 0.3 and not other)


def inner_release_keeps(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("inner")
    factory = grading.factory(lease_ms=5000)

    def other_owner_asks() -> bool:
        lock = factory.lock(name)
        taken = lock.acquire(blocking=False)
        if taken:
            lock.release()
        return taken

    def nested() -> tuple[bool, bool, bool]:
        outer, inner = factory.lock(name), factory.lock(name)
        if not (outer.acquire() and inner.acquire(timeout=0.3)):
            return False, False, False
        inner.release()
        during = grading.in_thread(other_owner_asks)
        outer.release()
        after = grading.in_thread(other_owner_asks)
        return True, during, after

    return inner_release_verdict(*grading.in_thread(nested))


def two_owners_at_once(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("steps")
    watched = grading.factory(lease_ms=5000, watched_key=grading.key_of(name))
    paused, go = pause_after_first_read(watched.client)
    asking = Background(lambda: watched.lock(name).acquire(blocking=False))
    grading.until(lambda: paused.is_set() or asking.done(), seconds=10)
    b_in = grading.take(grading.factory(lease_ms=5000), name, blocking=False) is not None
    go.set()
    a_in = bool(asking.result(10))
    window = _("A paused after its first read; ") if paused.is_set() else ""
    return window + _("A holds: %(a)s, B holds: %(b)s", a=yes_no(a_in), b=yes_no(b_in)), a_in != b_in


def recycled_thread(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("recycled")
    factory = grading.factory(lease_ms=5000)

    # Each thread asks and ends, holding it; each later one asks only once Python has
    # given it the first one's id (in the lock's own process, where its threads are).
    taken = grading.in_recycled_threads(factory, name, later=19)
    return _("%(taken)s of 20 got in (%(reused)s were given a dead thread's id)",
             taken=taken.count(True), reused=len(taken) - 1), taken.count(True) == 1


# --- C14, C36: the watchdog ------------------------------------------------------------------

def slow_holder_keeps(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("slow")
    factory = grading.factory()
    leases = 3

    def slow_work() -> tuple[list[bool], str]:
        lock = factory.lock(name)
        lock.acquire()
        others = []
        for _lease in range(leases):
            time.sleep(grading.lease_ms / 1000)  # the work: longer than a lease, on purpose
            others.append(grading.in_thread(lambda: factory.lock(name).acquire(blocking=False)))
        try:
            lock.ensure_held()
            state = "still held"
        except LockLost:
            state = "lost"
        grading.release_quietly(lock, LockLost)
        return others, state

    others, state = grading.in_thread(slow_work)
    observed = _("after each of %(leases)s leases another owner got in: %(others)s; at the end "
                 "the lock was %(state)s", leases=leases, others=others,
                 state=_("still held") if state == "still held" else _("lost"))
    return observed, not any(others) and state == "still held"


def dead_holder_frees(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("dead")
    # The watchdog renews a few times first: a lock that only frees because it was never
    # renewed is not the point.
    problem = grading.holder_killed(name, after_seconds=2 * grading.lease_ms / 1000)
    if problem:
        return problem, False
    waited = grading.next_owner_waits(name)
    bound = grading.lease_ms / 1000 + 0.3
    if waited is None:
        return _("nobody got the lock in %(seconds)s s", seconds=grading.patience()), False
    return _("the next owner got in %(waited).2f s after the kill (the lease: %(lease)s ms)",
             waited=waited, lease=grading.lease_ms), waited <= bound


# --- C15: fencing --------------------------------------------------------------------------

def late_write_refused(grading: Grading) -> tuple[str, bool]:
    from lockshop.exercises.checks.fencing import paused_holder_writes_late
    return paused_holder_writes_late(grading)


BASICS = (
    Check("C09", lazy_gettext("a holder is killed (SIGKILL) inside its section; another owner "
                              "waits"),
          lazy_gettext("the lock frees by itself within its lease: the next owner gets in"),
          lazy_gettext("Give the key an expiry when you create it: SET key token NX PX "
                       "lease_ms (self.client.set(self.key, self.token, nx=True, "
                       "px=self.lease_ms))."),
          killed_in_section),
    Check("C10", lazy_gettext("the holder's process dies right after its first write of the "
                              "key (the grader stops it there, wherever that is in your code)"),
          lazy_gettext("the key already had an expiry: the next owner gets in after the lease"),
          lazy_gettext("SETNX then EXPIRE are two commands: a crash between them leaves a key "
                       "that never expires. Set the value and the expiry in ONE command: SET "
                       "... NX PX."),
          crash_after_first_write),
)
TOKEN = (
    Check("C11", lazy_gettext("A's lease runs out, B takes the lock, then A releases"),
          lazy_gettext("B's lock stays: A deletes only a key that holds its own token"),
          lazy_gettext("A plain DEL deletes whoever's lock is there. Compare the key's value "
                       "with self.token and delete only if it is yours, in one Lua script: "
                       "self.run(script, keys=[self.key], args=[self.token])."),
          late_release),
    Check("C12", lazy_gettext("A's release is paused right after it reads the key; meanwhile "
                              "its lease runs out and B takes the lock"),
          lazy_gettext("B's lock stays: the compare and the delete are one step"),
          lazy_gettext("GET, compare, then DEL is two commands with a gap between them. Do the "
                       "comparison and the delete inside one Lua script (self.run), which Redis "
                       "runs without interruption."), window_in_release),
)
REENTRANT = (
    Check("C13", lazy_gettext("the holder asks for its own lock again (an inner call, timeout "
                              "0.3 s)"),
          lazy_gettext("granted at once; another owner is refused"),
          lazy_gettext("Set reentrant = True, and keep a hash of owner -> count: in one Lua "
                       "script, if the key does not exist or already has self.owner, HINCRBY it "
                       "and PEXPIRE the key; otherwise refuse."), reenters),
    Check("C27", lazy_gettext("the holder enters twice, its inner call releases, another owner "
                              "asks"),
          lazy_gettext("refused until the outer call releases too"),
          lazy_gettext("The release must count down (HINCRBY owner -1) and DEL the key only "
                       "when the count reaches 0, in one Lua script."), inner_release_keeps),
    Check("C28", lazy_gettext("two owners ask at once; the first is paused right after its "
                              "first read of the key"),
          lazy_gettext("exactly one of them holds the lock"),
          lazy_gettext("EXISTS, then HSET, then PEXPIRE are separate commands: another owner "
                       "can slip in between them. Put the check and the writes in one Lua "
                       "script (self.run)."), two_owners_at_once),
    Check("C49", lazy_gettext("20 threads, one after another, each takes the lock and ends "
                              "without releasing (Python gives later threads a dead thread's "
                              "id)"),
          lazy_gettext("exactly 1 of 20 gets in"),
          lazy_gettext("Name the owner with self.owner (made per thread, never reused), not "
                       "with threading.get_ident(): Python hands a dead thread's id to the "
                       "next thread."), recycled_thread),
)
WATCHDOG = (
    Check("C14", lazy_gettext("the holder works for three leases in a row, then checks "
                              "ensure_held()"),
          lazy_gettext("nobody else gets in, and the lock is still held at the end"),
          lazy_gettext("Start a background thread on a successful acquire that renews the "
                       "lease (PEXPIRE, only while the lock is still yours: one Lua script) "
                       "every third of self.lease_ms, and stop it in _release. Let _still_held "
                       "say False once a renewal failed."), slow_holder_keeps),
    Check("C36", lazy_gettext("a holder whose watchdog has been renewing is killed (SIGKILL)"),
          lazy_gettext("the lock frees within one lease of the death"),
          lazy_gettext("Renew the lease, do not lengthen it: PEXPIRE to self.lease_ms each "
                       "time, from a thread of the holder's own process, so that renewals stop "
                       "when it dies."), dead_holder_frees),
)
FENCING = (
    Check("C15", lazy_gettext("A is paused (SIGSTOP) past its lease; B takes the lock and "
                              "writes; A resumes and writes late through the shop's fenced "
                              "write"),
          lazy_gettext("A's late write is refused: B's fencing token is newer than A's"),
          lazy_gettext("Hand out a number that grows with every acquisition (INCR a counter "
                       "key in the same Lua script as the acquire) and store it in "
                       "self._fencing_token: the shop writes only with a fencing token newer "
                       "than the last one it saw."), late_write_refused),
)
