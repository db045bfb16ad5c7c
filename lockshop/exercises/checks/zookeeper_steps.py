"""The ZooKeeper lessons, turned on a student's lock.

The grader reads ZooKeeper itself, not the student's code: ``wchp`` lists which
sessions watch which node, ``dump`` which ephemeral nodes each session has. The watches
on a parent's children, which ``wchp`` leaves out, are read off the waiters' traffic by
the proxy each factory reaches the server through (``Grading.children_watched``); so are
a waiter's session and a session to end (``Grading.session_of``,
``Grading.expire_session``). So "a release wakes every waiter" is the number of sessions
watching one node, and "a waiter that gave up left its node behind" is an ephemeral node
still owned by its session. Each waiter has a session of its own (a factory of its own),
as it would in its own process.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from locks import LockError, LockLost
from lockshop.cluster.zookeeper_servers import four_letter_word
from lockshop.exercises.grading import Background, Check, Grading
from shop.i18n import N_, _, lazy_gettext, yes_no

WAITERS = 5
#: How long C19 looks at the waiters' watches once they are queued (``seen_watching``).
SETTLE_S = 1.0
#: What ensure_held() did (marked here, said in the reader's language).
PASSES, RAISES_LOCK_LOST = N_("passes"), N_("raises LockLost")


def watches(grading: Grading, waiters: Iterable[Waiter] = ()) -> dict[str, set[int]]:
    """Every watched path and the sessions watching it: the nodes' watches from the server
    (``wchp``), and the children's watches (get_children) that ``wchp`` does not list:
    with the lock in a host, those of every session through the grader's proxies
    (``Grading.children_watches``), else those of the clients of ``waiters``."""
    server = grading.zookeeper
    found: dict[str, set[int]] = {}
    path = None
    for line in four_letter_word(server.port, "wchp", server.host.address).splitlines():
        if line and not line[0].isspace():
            path = line.strip()
            found[path] = set()
        elif line.strip().startswith("0x") and path is not None:
            found[path].add(int(line.strip(), 16))
    through_proxies = grading.children_watches()
    if through_proxies is not None:
        for session, paths in through_proxies.items():
            for path in paths:
                found.setdefault(path, set()).add(session)
        return found
    for waiter in waiters:
        for path in grading.children_watched(waiter.factory):
            found.setdefault(path, set()).add(waiter.session)
    return found


def ephemerals(grading: Grading) -> dict[int, list[str]]:
    """Every session that owns ephemeral nodes, and those nodes (``dump``)."""
    server = grading.zookeeper
    text = four_letter_word(server.port, "dump", server.host.address)
    found: dict[int, list[str]] = {}
    session = None
    for line in text.partition("Sessions with Ephemerals")[2].splitlines()[1:]:
        if line.strip().startswith("0x") and line.strip().endswith(":"):
            session = int(line.strip()[:-1], 16)
            found[session] = []
        elif line.strip().startswith("/") and session is not None:
            found[session].append(line.strip())
    return found


def _watching(grading: Grading, waiter: Waiter, waiters: Iterable[Waiter]) -> bool:
    """Whether ``waiter``'s own session watches a node: counting all the watches instead
    would let a lock that sets two per waiter seem to have queued one waiter early."""
    return any(waiter.session in sessions for sessions in watches(grading, waiters).values())


def _watch_count(grading: Grading, waiters: Iterable[Waiter] = ()) -> int:
    return sum(len(sessions) for sessions in watches(grading, waiters).values())


class Waiter:
    """One waiter with a session of its own, waiting in a thread for the lock; when it
    gets it, it says so and releases at once."""

    def __init__(self, grading: Grading, name: str, number: int, timeout: float,
                 served: list[int], factory=None) -> None:
        #: Its session: made here, or before (a connection takes a while on a busy machine).
        self.factory = factory or grading.factory()
        self.session = grading.session_of(self.factory)
        self.number = number
        self.result: bool | None = None
        self.acquired_at: float | None = None

        def wait() -> None:
            lock = self.factory.lock(name, timeout=timeout)
            self.result = lock.acquire()
            if self.result:
                self.acquired_at = time.monotonic()
                served.append(number)
                lock.release()

        self.job = Background(wait)

    def join(self, seconds: float = 30) -> None:
        """Wait for it to be served (or give up); its lock's error, if it raised one."""
        self.job.result(seconds)


# --- C18: the node goes with the session --------------------------------------------------

def dead_holder_node_goes(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("dead")
    problem = grading.holder_killed(name)
    if problem:
        return problem, False
    waited = grading.next_owner_waits(name)
    if waited is None:
        return _("nobody got the lock in %(seconds)s s after the kill",
                 seconds=grading.patience()), False
    return _("the next owner got in %(waited).2f s after the kill (the session timeout: "
             "%(session)s ms)", waited=waited, session=grading.lease_ms), True


# --- C22: a lock whose session ended is not held -------------------------------------------

def expired_session_is_not_held(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("expired")
    factory = grading.factory()
    lock = grading.take(factory, name)
    if lock is None:
        return _("the lock could not be taken while free"), False
    before = _ensure_held(lock)
    grading.expire_session(factory)
    after = _ensure_held(lock)
    other = grading.take(grading.factory(), name, timeout=5)
    if other is not None:
        other.release()
    observed = _("while held: %(before)s; after its session expired: %(after)s; another owner "
                 "then got in: %(other)s", before=_(before), after=_(after),
                 other=yes_no(other is not None))
    return observed, before == PASSES and after == RAISES_LOCK_LOST and other is not None


def _ensure_held(lock) -> str:
    try:
        lock.ensure_held()
    except LockLost:
        return RAISES_LOCK_LOST
    except LockError as error:
        return f"raises {type(error).__name__}"
    return PASSES


# --- C19, C20: one wake-up per release, in arrival order ---------------------------------

def _queue_behind_a_holder(grading: Grading, name: str, *, one_at_a_time: bool
                           ) -> tuple[object, list[Waiter], list[int], int]:
    held_lock = grading.take(grading.factory(), name)
    if held_lock is None:
        raise AssertionError(_("the lock could not be taken while free"))
    served: list[int] = []
    waiters = []
    for number in range(1, WAITERS + 1):
        waiters.append(Waiter(grading, name, number, 30, served))
        if one_at_a_time:  # the next arrives once this one is seen waiting (its watch)
            grading.until(lambda w=waiters[-1]: _watching(grading, w, waiters), seconds=3)
    grading.until(lambda: _watch_count(grading, waiters) >= WAITERS, seconds=3)
    return held_lock, waiters, served, _watch_count(grading, waiters)


def seen_watching(grading: Grading, waiters: list[Waiter], seconds: float = SETTLE_S
                  ) -> tuple[str, int, int]:
    """The path seen watched by the most sessions, how many, and the most watches seen,
    looking again and again for ``seconds``: a herd's watch fires at every change (a later
    waiter's node wakes every waiter before it) and is set again a moment later, so that
    one look may fall in between and see one session per node (a lock that also watched
    the node ahead then passed for fair). A fair lock's watches stay put while nobody
    leaves."""
    widest, most, total = "", 0, 0
    deadline = time.monotonic() + seconds
    while True:
        found = watches(grading, waiters)
        for path, sessions in found.items():
            if len(sessions) > most:
                widest, most = path, len(sessions)
        total = max(total, sum(len(sessions) for sessions in found.values()))
        if time.monotonic() >= deadline:
            return widest, most, total
        time.sleep(0.05)


def one_wakeup_per_release(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("herd")
    held_lock, waiters, served, _total = _queue_behind_a_holder(grading, name,
                                                                one_at_a_time=False)
    _path, most, total = seen_watching(grading, waiters)
    held_lock.release()
    for waiter in waiters:
        waiter.join()
    if total == 0:
        observed = _("%(waiters)s waiters set no watch at all; %(served)s were served",
                     waiters=WAITERS, served=len(served))
    elif most == 1:
        observed = _("%(waiters)s waiters set %(total)s watches; each node was watched by one "
                     "session at most (its release wakes only that one); %(served)s were served",
                     waiters=WAITERS, total=total, served=len(served))
    else:
        observed = _("%(waiters)s waiters set %(total)s watches; the most sessions watching one "
                     "node: %(most)s (its release wakes them all); %(served)s were served",
                     waiters=WAITERS, total=total, most=most, served=len(served))
    return observed, most == 1 and total >= WAITERS and len(served) == WAITERS


def arrival_order(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("order")
    held_lock, waiters, served, _watches = _queue_behind_a_holder(grading, name,
                                                               one_at_a_time=True)
    held_lock.release()
    for waiter in waiters:
        waiter.join()
    wanted = list(range(1, WAITERS + 1))
    return _("arrived %(arrived)s, served %(served)s", arrived=wanted, served=served), \
        served == wanted


# --- C38: look again; leave the queue on giving up ----------------------------------------

def look_again_and_leave(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("giveup")
    held_lock = grading.take(grading.factory(), name)
    if held_lock is None:
        return _("the lock could not be taken while free"), False
    served: list[int] = []
    # Both sessions first: the quitter's 2 s must be time for the patient waiter to queue
    # behind it and watch its node, not to connect (a second or more on a busy machine,
    # after which the patient queued behind the holder alone, and no lock was tested).
    sessions = grading.factory(), grading.factory()
    quitter = Waiter(grading, name, 1, 2.0, served, factory=sessions[0])
    grading.until(lambda: _watch_count(grading, [quitter]) >= 1, seconds=3)
    quitter_nodes = set(ephemerals(grading).get(quitter.session, []))
    patient = Waiter(grading, name, 2, 30, served, factory=sessions[1])
    grading.until(lambda: _watch_count(grading, [quitter, patient]) >= 2, seconds=3)
    quitter.join(10)

    def settled() -> bool:
        """The patient waiter has either walked in (wrongly) or, having looked again, watches
        a node that is not the quitter's: a state to wait for, not a moment."""
        if patient.result is not None:
            return True
        return any(patient.session in sessions and path not in quitter_nodes
                   for path, sessions in watches(grading, [patient]).items())

    grading.until(settled, seconds=10)
    walked_in = patient.result is not None
    left_behind = ephemerals(grading).get(quitter.session, [])
    held_lock.release()
    # Behind a node left behind, the patient waiter can never be served: no need to wait.
    patient.join(2 if left_behind else 10)
    observed = _("the waiter that gave up returned %(quit)s and left %(left)s node(s) behind; "
                 "the waiter behind it walked in while the holder held: %(walked)s; after the "
                 "release it got the lock: %(got)s", quit=quitter.result, left=len(left_behind),
                 walked=yes_no(walked_in), got=yes_no(patient.result is True))
    return observed, (quitter.result is False and not left_behind and not walked_in
                      and patient.result is True)


EPHEMERAL = (
    Check("C22", lazy_gettext("the holder calls ensure_held() (as the shop does before it "
                              "writes); then its session expires, and it calls ensure_held() "
                              "again"),
          lazy_gettext("passes while held; raises LockLost once the session has expired"),
          lazy_gettext("In _still_held, ask ZooKeeper: is our node still there, and is its "
                       "ephemeralOwner our session (self.client.client_id[0])? A new session "
                       "holds nothing."), expired_session_is_not_held),
    Check("C18", lazy_gettext("a holder is killed (SIGKILL); another owner waits"),
          lazy_gettext("the holder's session ends, its ephemeral node goes with it: the next "
                       "owner gets in after the session timeout"),
          lazy_gettext("Create the lock's node as ephemeral (self.client.create(path, "
                       "ephemeral=True)): ZooKeeper deletes it when the session that made it "
                       "ends."), dead_holder_node_goes),
)
QUEUE = (
    Check("C19", lazy_gettext("%(waiters)s waiters queue behind a holder, which then releases",
                              waiters=WAITERS),
          lazy_gettext("each waiter watches a different node: a release wakes exactly one"),
          lazy_gettext("Watch only the node just ahead of yours (exists(path_of_the_one_ahead, "
                       "watch=...)), not the holder's node: with everyone watching one node, "
                       "every release wakes every waiter (the herd effect)."),
          one_wakeup_per_release),
    Check("C20", lazy_gettext("%(waiters)s waiters arrive one after another behind a holder",
                              waiters=WAITERS),
          lazy_gettext("they are served in the order they arrived"),
          lazy_gettext("Queue with an ephemeral *sequential* node (sequence=True): ZooKeeper "
                       "numbers the nodes in the order they were created; hold the lock when "
                       "yours is the lowest."), arrival_order),
    Check("C38", lazy_gettext("a waiter gives up (timeout 1 s) while the one behind it watches "
                              "its node"),
          lazy_gettext("the one that gave up removes its node; the one behind looks again and "
                       "waits for the holder"),
          lazy_gettext("When the node you watch goes, list the children again: it may have been "
                       "a waiter that gave up, with the holder still ahead of you. And in "
                       "_gave_up, delete your own node, or it blocks everyone queued behind "
                       "it."), look_again_and_leave),
)
