"""A measured lab beyond the articles: barging against hand-off, fairness bought with
throughput, and bought back by a lock with two modes (Go's ``sync.Mutex``).

Three locks, taking turns in the same run (three rounds each), each taken by the
same four processes for the same time, each section a read and a write of a
counter and a short pause:

* ``redis`` barges: whoever asks first when the lock is free takes it, so the
  holder that just released, still running, mostly takes it back. It never hands
  the lock over, and a waiter that keeps losing waits a long time.
* ``redis_two_mode`` with a threshold of 0 is a first-come-first-served queue:
  every release hands the lock to the head of the queue. No waiter waits more
  than a turn of the queue, but nearly every section starts with a sleeping
  contender being woken while the lock sits idle.
* ``redis_two_mode`` with a threshold of a few sections: barging while no waiter has
  waited as long as the threshold, a hand-off to the head of the queue once one has.

The verdict reads counts, not clocks. How many sections were handed over is what
fairness costs (each is a sleeper woken while the lock is idle), and it is set by
the locks' rules: never, at nearly every section, at most once per threshold to
each contender. A wait is counted in the sections that went ahead of the waiter,
the barging lock's most against the others' in the same run, with a margin of two.
The threshold itself is ten sections, as long as a section takes on this machine
now (the barging lock's first round says). The milliseconds and the sections per
second are shown beside the counts: on a quiet machine the two-mode lock does
about what the barging lock does and the queue less; on a machine shared with
much else every figure moves, and the counts do not.
"""

from __future__ import annotations

import bisect
import itertools
import multiprocessing
import queue
import statistics
import time
from dataclasses import dataclass

import redis

import locks
from locks import Backends
from lockshop.workshop.staging.record import Lab
from shop.i18n import N_, _

CONTENDERS = 4
#: Each lock runs this many times for SECONDS, the three taking turns, so that a slow
#: moment of a shared machine falls on all three; their figures are summed.
ROUNDS = 3
SECONDS = 0.6
#: The pause inside each section (besides its read and write).
SECTION_S = 0.001
#: The two-mode lock's threshold, in sections: the barging lock's first round says how
#: long a section takes on this machine now. Many sections to a threshold (few
#: hand-offs), and a threshold short beside a barging lock's longest wait.
SECTIONS_PER_THRESHOLD = 10


@dataclass
class Run:
    """What one lock did under contention, over its rounds."""

    sections: int = 0
    seconds: float = 0.0
    longest_wait_ms: float = 0.0
    #: The most sections that began while one waiter waited.
    most_overtaken: int = 0
    #: Sections whose holder was not the holder of the section before.
    switches: int = 0
    #: Sections that a release handed to a sleeping waiter (starvation mode).
    handovers: int = 0
    #: From one section's start to the next one's, the median.
    cycle_ms: float = 0.0

    def add(self, other: Run) -> None:
        self.sections += other.sections
        self.seconds += other.seconds
        self.longest_wait_ms = max(self.longest_wait_ms, other.longest_wait_ms)
        self.most_overtaken = max(self.most_overtaken, other.most_overtaken)
        self.switches += other.switches
        self.handovers += other.handovers
        self.cycle_ms = self.cycle_ms or other.cycle_ms  # the first round's

    @property
    def per_second(self) -> float:
        return self.sections / self.seconds

    @property
    def switches_per_100(self) -> float:
        return 100 * self.switches / max(self.sections, 1)

    @property
    def handovers_per_100(self) -> float:
        return 100 * self.handovers / max(self.sections, 1)


def contend(redis_url: str, strategy: str, counter: str, threshold_ms: int | None = None) -> Run:
    """CONTENDERS processes take turns on one lock for SECONDS: each section reads and
    writes a counter and pauses SECTION_S. Lost increments would mean two holders.

    Processes, not threads: a barging lock's edge is that the releaser is still running
    when it asks again, and threads of one process take turns on one interpreter lock.
    Forked from a fork server (a clean process of one thread, started once: forking the
    console's threaded process could copy a lock another thread holds), so they start
    at once; each opens its own client."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])  # imported once, by the server
    start = context.Barrier(CONTENDERS)
    answers = context.Queue()
    processes = [context.Process(target=_contender, args=(
        number, redis_url, strategy, threshold_ms, counter, start, answers))
        for number in range(CONTENDERS)]
    for process in processes:
        process.start()
    try:  # each contender's sections
        runs = [answers.get(timeout=SECONDS + 60) for _ in processes]
    except queue.Empty:
        raise RuntimeError("a contender of the lab did not answer") from None
    for process in processes:
        process.join()
    # (asked, acquired, release called, who, handed over), in the order of the sections
    sections = sorted((section for sections in runs for section in sections),
                      key=lambda section: section[1])
    client = redis.Redis.from_url(redis_url)
    if int(client.get(counter) or 0) != len(sections):
        raise RuntimeError(f"{counter}: lost increments, two holders at once")
    acquired = [section[1] for section in sections]
    # How many sections began while each waiter waited: a wait counted in sections.
    overtaken = [index - bisect.bisect_right(acquired, asked)
                 for index, (asked, *_) in enumerate(sections)]
    holders = [section[3] for section in sections]
    return Run(
        sections=len(sections), seconds=sections[-1][2] - sections[0][1],
        longest_wait_ms=max(got - asked for asked, got, *_ in sections) * 1000,
        most_overtaken=max(overtaken),
        switches=sum(1 for before, after in itertools.pairwise(holders) if before != after),
        handovers=sum(1 for *_, handed in sections if handed),
        cycle_ms=1000 * statistics.median(b - a for a, b in itertools.pairwise(acquired)))


def _contender(number: int, redis_url: str, strategy: str, threshold_ms: int | None,
               counter: str, start, answers) -> None:
    """One contender, in a process of its own: its sections (asked, acquired, release
    called, who, whether it was handed over), on the machine's wall clock, which every
    process reads alike."""
    factory = locks.open_factory(strategy, Backends(redis_url=redis_url))
    options = {} if threshold_ms is None else {"starving_after_ms": threshold_ms}
    client = redis.Redis.from_url(redis_url)
    client.ping()
    sections: list[tuple[float, float, float, int, bool]] = []
    start.wait()
    deadline = time.time() + SECONDS
    while time.time() < deadline:
        lock = factory.lock_class("product:1", strategy=strategy, timeout=10,
                                  **factory.lock_arguments(), **options)
        asked = time.time()
        lock.acquire()
        acquired = time.time()
        client.set(counter, int(client.get(counter) or 0) + 1)
        time.sleep(SECTION_S)
        sections.append((asked, acquired, time.time(), number,
                         getattr(lock, "handed_over", False)))
        lock.release()
    factory.close()
    answers.put(sections)


def stage_handoff(run) -> None:
    server, = run.parts.redis()
    run.measure("redis, redis_two_mode", _(
        "%(threads)s processes take turns on one lock, each section a read, a write and a "
        "%(pause)s ms pause: the barging lock, the two-mode lock with a threshold of 0 (a "
        "queue: every release hands over), and with a threshold of %(sections)s sections; "
        "%(rounds)s rounds of %(seconds)s s each, taking turns", threads=CONTENDERS,
        pause=f"{SECTION_S * 1000:g}", sections=SECTIONS_PER_THRESHOLD, rounds=ROUNDS,
        seconds=f"{SECONDS:g}"))
    url = server.url
    barging, fair, both = Run(), Run(), Run()
    threshold_ms = None
    for number in range(ROUNDS):
        barging.add(contend(url, "redis", f"barging:{number}"))
        if threshold_ms is None:  # a section's time now, on this machine
            threshold_ms = max(1, round(SECTIONS_PER_THRESHOLD * barging.cycle_ms))
        fair.add(contend(url, "redis_two_mode", f"fair:{number}", threshold_ms=0))
        both.add(contend(url, "redis_two_mode", f"both:{number}", threshold_ms=threshold_ms))

    def said(name: str, figures: Run) -> str:
        return _("%(name)s: %(rate)s sections/s; longest wait %(wait)s ms, in which "
                 "%(overtaken)s sections went ahead; handed over %(handovers)s times and the "
                 "owner switched %(switches)s times per 100 sections", name=name,
                 rate=f"{figures.per_second:,.0f}", wait=f"{figures.longest_wait_ms:,.0f}",
                 overtaken=figures.most_overtaken,
                 handovers=f"{figures.handovers_per_100:.0f}",
                 switches=f"{figures.switches_per_100:.0f}")

    # At most one hand-off per threshold to each contender: it is handed the lock only
    # once it has waited that long.
    most_handovers = CONTENDERS * (both.seconds * 1000 / threshold_ms + ROUNDS)
    run.check(_("the barging lock"),
              expected=_("never a hand-off: whoever asks first takes a free lock, so a waiter "
                         "that keeps losing the race sees more than twice as many sections go "
                         "ahead of it as on the two-mode lock"),
              observed=said("redis", barging),
              agrees=(barging.handovers == 0
                      and barging.most_overtaken > 2 * both.most_overtaken))
    run.check(_("the queue: every release hands the lock to the head"),
              expected=_("a waiter passed by a few sections at most, paid for with a hand-off "
                         "at nearly every section (80 in 100 or more), each a sleeper woken "
                         "while the lock sits idle"),
              observed=said(_("two modes, threshold 0"), fair),
              agrees=(fair.handovers_per_100 >= 80
                      and 2 * fair.most_overtaken < barging.most_overtaken))
    run.check(_("two modes: barging until the head has waited %(threshold)s ms (%(sections)s "
                "sections), then hand-off", threshold=threshold_ms,
                sections=SECTIONS_PER_THRESHOLD),
              expected=_("both: hand-offs, but at most one per threshold to each contender "
                         "(%(most)s here) and under half as many as the queue's, and a "
                         "bounded wait that the barging lock lacks",
                         most=f"{most_handovers:.0f}"),
              observed=said(_("two modes, threshold %(threshold)s ms",
                              threshold=threshold_ms), both),
              agrees=(0 < both.handovers <= most_handovers
                      and 2 * both.handovers_per_100 < fair.handovers_per_100))


LABS = (
    Lab("C50", "barging_handoff", N_("Barging is fast and starves a waiter, a queue is fair "
        "and slow; a lock with two modes (Go's mutex) gets both"),
        (), ("redis",), 8, stage_handoff, measured=True),
)
