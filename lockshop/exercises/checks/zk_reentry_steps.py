"""ZooKeeper re-entry (lesson C29), turned on a student's queue lock.

A0 keeps the owner's identity in the node: "compare it with the data of the
lowest node; if it is yours, the lock is yours already". So the grader asks
as the owners a shop has: the holder's own thread again, through another lock
object (an inner call); another thread of the *same* process, on the same
ZooKeeper session (a lock that takes "my session's node" for "mine" lets it
in); another process; and the holder again after its session expired and
another owner took the lock (a lock that remembers "I hold it" only in its
own memory walks in beside the new holder). Each step's owners are threads
of their own; what they saw is all the grader reads.
"""

from __future__ import annotations

import threading
import time

from locks import LockError
from lockshop.exercises.grading import (
    CHECK_SECONDS,
    Background,
    Check,
    Grading,
    inner_release_verdict,
)
from shop.i18n import _, lazy_gettext, yes_no

#: How long an inner call may wait for its own lock before it is said to have queued.
INNER_TIMEOUT = 0.5
#: How long another owner waits for the lock after the holder's last release.
AFTER_RELEASE_S = 5.0


def _asks(grading: Grading, factory, name: str, patience: float = 0.0) -> bool:
    """Another owner (this thread) tries once, or waits up to ``patience`` seconds, and
    lets go if it got in."""
    lock = factory.lock(name, timeout=patience)
    taken = lock.acquire(blocking=patience > 0)
    if taken:
        grading.release_quietly(lock, LockError)
    return taken


# --- C29: the same owner enters again; no other owner does ------------------------------------

def same_owner_again(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("reenter")
    factory, elsewhere = grading.factory(), grading.factory()

    def holder() -> tuple[bool, float, bool, bool]:
        outer = factory.lock(name)
        if not outer.acquire():
            raise AssertionError(_("the lock could not be taken while free"))
        inner = factory.lock(name, timeout=INNER_TIMEOUT)
        started = time.monotonic()
        again = inner.acquire()
        waited = time.monotonic() - started
        # Another thread of this process: the same ZooKeeper session, another owner.
        sibling = grading.in_thread(_asks, grading, factory, name)
        other = grading.in_thread(_asks, grading, elsewhere, name)
        if again:
            grading.release_quietly(inner, LockError)
        grading.release_quietly(outer, LockError)
        return again, waited, sibling, other

    again, waited, sibling, other = grading.in_thread(holder)
    observed = _("asked again: %(again)s after %(waited).2f s; another thread of the same "
                 "process (the same session) got in: %(sibling)s; another process got in: "
                 "%(other)s", again=yes_no(again), waited=waited, sibling=yes_no(sibling),
                 other=yes_no(other))
    return observed, again and waited < INNER_TIMEOUT and not sibling and not other


# --- C27: an inner release keeps the lock ------------------------------------------------------

def inner_release_keeps(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("inner")
    factory, elsewhere = grading.factory(), grading.factory()

    def nested() -> tuple[bool, bool, bool]:
        outer, inner = factory.lock(name), factory.lock(name, timeout=INNER_TIMEOUT)
        if not outer.acquire():
            return False, False, False
        if not inner.acquire():
            grading.release_quietly(outer, LockError)
            return False, False, False
        inner.release()
        during = grading.in_thread(_asks, grading, elsewhere, name)
        outer.release()
        # A release may return before the server has deleted the node (the project's
        # lock deletes an uncontended hold's node without waiting): the other owner
        # waits for it, as a queued one would, rather than looking once.
        after = grading.in_thread(_asks, grading, elsewhere, name, AFTER_RELEASE_S)
        return True, during, after

    return inner_release_verdict(*grading.in_thread(nested))


# --- C29: an expired session's holder is not the holder any more -------------------------------

def expired_holder_not_reentered(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("expired")
    factory = grading.factory()
    held, ask_again = threading.Event(), threading.Event()

    def holder() -> bool:
        outer = factory.lock(name)
        if not outer.acquire():
            raise AssertionError(_("the lock could not be taken while free"))
        held.set()
        ask_again.wait(CHECK_SECONDS)
        inner = factory.lock(name, timeout=INNER_TIMEOUT)
        again = inner.acquire()
        if again:
            grading.release_quietly(inner, LockError)
        # Its node went with its session: LockLost, said nowhere.
        grading.release_quietly(outer, LockError)
        return again

    asking = Background(holder)
    if not grading.until(lambda: held.is_set() or asking.done(), seconds=10):
        ask_again.set()
        asking.result(10)  # its error, if it raised one
        return _("the lock could not be taken while free"), False
    grading.expire_session(factory)
    other = grading.take(grading.factory(), name, timeout=5)
    ask_again.set()
    again = asking.result(CHECK_SECONDS)
    if other is not None:
        grading.in_thread(grading.release_quietly, other, LockError)
    observed = _("after the holder's session expired another owner got in: %(other)s; the "
                 "old holder then asked again (an inner call) and got in too: %(again)s",
                 other=yes_no(other is not None), again=yes_no(again))
    return observed, other is not None and not again


# --- C49: an owner never given to another thread -----------------------------------------------

def recycled_thread(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("recycled")
    factory = grading.factory()

    # Each thread takes the lock and ends, holding it; each later one asks only once
    # Python has given it the first one's id (in the process the lock lives in).
    taken = grading.in_recycled_threads(factory, name, later=9)
    later = taken[1:]
    return _("%(taken)s of %(threads)s got in (%(reused)s were given a dead thread's id)",
             taken=taken.count(True), threads=len(taken), reused=len(later)), \
        taken.count(True) == 1


REENTRY = (
    Check("C29", lazy_gettext("the holder asks for its lock again (an inner call, another lock "
                              "object, timeout %(seconds)s s); then another thread of the same "
                              "process asks, and another process", seconds=INNER_TIMEOUT),
          lazy_gettext("the holder is let in at once; the other thread and the other process "
                       "are refused"),
          lazy_gettext("Write self.owner as your node's data. In _try_acquire, before you "
                       "queue, read the lowest node's data (self.client.get(path)[0]): if it is "
                       "your owner, the lock is yours already: count one more entry and return "
                       "True, without a node of your own. Compare owners, not sessions: every "
                       "thread of a process shares one session."), same_owner_again),
    Check("C27", lazy_gettext("the holder enters twice, its inner call releases, another owner "
                              "asks"),
          lazy_gettext("refused until the outer call releases too"),
          lazy_gettext("Count the entries of your node (the class's entries dict, by node path): "
                       "_release counts one down and deletes the node only when the count "
                       "reaches 0."), inner_release_keeps),
    Check("C29", lazy_gettext("the holder's session expires; another owner takes the lock; the "
                              "old holder then asks again (an inner call)"),
          lazy_gettext("the old holder is refused: its node went with its session, and the "
                       "lowest node is another owner's"),
          lazy_gettext("Ask ZooKeeper, not your memory: an entry count is yours only while the "
                       "lowest node is your node, with your owner as its data. After a session "
                       "expired, your node is gone: queue again like anyone."),
          expired_holder_not_reentered),
    Check("C49", lazy_gettext("10 threads, one after another, each takes the lock and ends "
                              "without releasing (Python gives later threads a dead thread's "
                              "id)"),
          lazy_gettext("exactly 1 of 10 gets in"),
          lazy_gettext("Write self.owner into the node (made per thread, never reused), not "
                       "threading.get_ident(): Python hands a dead thread's id to the next "
                       "thread, which would enter a lock a dead thread holds."), recycled_thread),
)
