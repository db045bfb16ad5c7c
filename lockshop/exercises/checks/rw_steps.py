"""The read/write lessons (C21, C39), turned on a student's ZooKeeper read/write lock.

Every reader and writer is a party with a ZooKeeper session of its own, as it
would be in its own process, held inside the lock until the grader lets it
go: holders are kept open from outside, never by a sleep. "Waiting" is what
ZooKeeper shows: the party's session watches a node (``wchp``, and the
children's watches its proxy saw the server set). "Released" is its node gone from the
server (``dump``), not its thread returning: a release may send its delete
without waiting for the answer.
"""

from __future__ import annotations

import threading
import time

from lockshop.exercises.checks.zookeeper_steps import ephemerals, watches
from lockshop.exercises.grading import CHECK_SECONDS, Background, Check, Grading
from shop.i18n import _, lazy_gettext, yes_no

READ, WRITE = "read", "write"
READERS = 3
#: How long a party may wait for the lock before it gives up (longer than any check).
PATIENCE = 20.0
#: How long a step of the queue may take to show on a busy machine.
SETTLE = 10.0


class Party:
    """A reader or a writer with a session of its own: it asks for the lock in a thread,
    and once in, holds it until ``let_go()``."""

    def __init__(self, grading: Grading, name: str, kind: str) -> None:
        self.grading = grading
        self.factory = grading.factory()
        self.session = grading.session_of(self.factory)
        self.kind = kind
        self.entered = threading.Event()
        self.entered_at: float | None = None
        self._leave = threading.Event()

        def hold() -> bool:
            lock = self.factory.read_lock(name, timeout=PATIENCE) if kind == READ \
                else self.factory.lock(name, timeout=PATIENCE)
            if not lock.acquire():
                return False
            self.entered_at = time.monotonic()
            self.entered.set()
            self._leave.wait(CHECK_SECONDS)
            lock.release()
            return True

        self.job = Background(hold)

    def watching(self) -> bool:
        """Whether its session watches a node now (it queued, and waits)."""
        return any(self.session in sessions
                   for sessions in watches(self.grading, [self]).values())

    def queued(self) -> bool:
        """In, or waiting: where a party that asked settles."""
        return self.entered.is_set() or self.watching() or self.job.done()

    def gone(self) -> bool:
        """Its node is gone from the server (released, or never made)."""
        return not ephemerals(self.grading).get(self.session)

    def let_go(self) -> None:
        """Release (once in), and wait until the server has deleted its node."""
        self._leave.set()
        self.grading.until(lambda: self.job.done() or not self.entered.is_set(),
                           seconds=SETTLE)
        self.grading.until(self.gone, seconds=SETTLE)

    def finish(self) -> None:
        """Let it go and wait for its thread: its lock's error, if it raised one."""
        self._leave.set()
        self.job.result(PATIENCE + SETTLE)


def _finish(*parties: Party) -> None:
    for party in parties:
        party._leave.set()
    for party in parties:
        party.finish()


def _arrive(grading: Grading, name: str, kind: str) -> Party:
    """A party asks, and the grader waits until it is in or queued."""
    party = Party(grading, name, kind)
    grading.until(party.queued, seconds=SETTLE)
    return party


# --- C21: readers share ------------------------------------------------------------------------

def readers_share(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("readers")
    readers = [Party(grading, name, READ) for _reader in range(READERS)]
    # Settled: every reader is in, or queued behind another (its session watches a node),
    # or has given up (its lock raised).
    grading.until(lambda: all(r.entered.is_set() for r in readers)
                  or all(r.queued() for r in readers), seconds=SETTLE)
    together = sum(r.entered.is_set() for r in readers)
    _finish(*readers)
    return _("%(together)s of %(readers)s readers held the read lock at once",
             together=together, readers=READERS), together == READERS


# --- C21: a writer waits for every reader ahead of it ------------------------------------------

def writer_waits_for_readers(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("writer")
    first = _arrive(grading, name, READ)
    second = _arrive(grading, name, READ)
    if not (first.entered.is_set() and second.entered.is_set()):
        _finish(first, second)
        return _("two readers could not hold the read lock together"), False
    writer = _arrive(grading, name, WRITE)
    in_at_once = writer.entered.is_set()
    # The reader just ahead of the writer goes first; the other still reads.
    second.let_go()
    grading.until(lambda: writer.entered.is_set() or writer.watching() or writer.job.done(),
                  seconds=SETTLE)
    in_beside_first = writer.entered.is_set()
    first.let_go()
    after = bool(grading.until(lambda: writer.entered.is_set() or writer.job.done(),
                               seconds=SETTLE)) and writer.entered.is_set()
    _finish(first, second, writer)
    observed = _("the writer got in while both readers read: %(at_once)s; after the reader "
                 "just ahead of it left, while the other still read: %(beside)s; after both "
                 "left: %(after)s", at_once=yes_no(in_at_once), beside=yes_no(in_beside_first),
                 after=yes_no(after))
    return observed, not in_at_once and not in_beside_first and after


# --- C39: readers that come after a waiting writer wait behind it ------------------------------

def writer_not_starved(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("starve")
    first = _arrive(grading, name, READ)
    if not first.entered.is_set():
        _finish(first)
        return _("a reader could not take the free read lock"), False
    writer = _arrive(grading, name, WRITE)
    if writer.entered.is_set():
        _finish(first, writer)
        return _("the writer got in while a reader read"), False
    late = _arrive(grading, name, READ)
    overtook = late.entered.is_set()
    first.let_go()
    grading.until(lambda: writer.entered.is_set() or late.job.done(), seconds=SETTLE)
    writer_in = writer.entered.is_set()
    late_beside_writer = writer_in and late.entered.is_set()
    writer.let_go()
    grading.until(lambda: late.entered.is_set() or late.job.done(), seconds=SETTLE)
    _finish(first, writer, late)
    if overtook:
        observed = _("a reader that came after the waiting writer got in at once, while the "
                     "first reader still read: the writer waits for as long as readers keep "
                     "coming")
    else:
        observed = _("the later reader waited; the writer got in when the first reader left: "
                     "%(writer)s; the later reader held beside the writer: %(beside)s; it got "
                     "in after the writer: %(after)s", writer=yes_no(writer_in),
                     beside=yes_no(late_beside_writer), after=yes_no(late.entered.is_set()))
    return observed, (not overtook and writer_in and not late_beside_writer
                      and late.entered.is_set())


READ_WRITE = (
    Check("C21", lazy_gettext("%(readers)s readers, each with a session of its own, ask for the "
                              "read lock and hold it", readers=READERS),
          lazy_gettext("all %(readers)s hold it at once", readers=READERS),
          lazy_gettext("A reader waits only for the writers ahead of it: in the reader's "
                       "blockers(), keep the nodes ahead of yours whose names start with "
                       "\"write-\", and leave out the readers. Readers queued together then hold "
                       "the lock together."), readers_share),
    Check("C21", lazy_gettext("two readers hold; a writer asks; the reader just ahead of the "
                              "writer leaves while the other still reads; then the other leaves"),
          lazy_gettext("the writer waits until both have left, then gets the lock"),
          lazy_gettext("A writer waits for every node ahead of it, readers too: its blockers() "
                       "are all the nodes ahead of yours. And a reader must not hand the lock "
                       "over on release (hands_over = False): the writer behind it would walk "
                       "in without looking, while other readers still read."),
          writer_waits_for_readers),
    Check("C39", lazy_gettext("a reader holds; a writer asks and waits; then another reader "
                              "asks"),
          lazy_gettext("the later reader waits behind the writer: the writer gets the lock when "
                       "the first reader leaves, the later reader after the writer"),
          lazy_gettext("Do not let a reader in because no writer *holds* the lock: a writer that "
                       "is queued ahead of the reader blocks it too. The reader's blockers() are "
                       "every writer ahead of its node, whether it holds or waits."),
          writer_not_starved),
)
