"""The lock benchmark harness, shared by ``lockshop bench redis`` and ``bench zookeeper``.

Two measures, for any lock that can be put behind one tiny interface
(``make(name) -> (acquire, release)``, built in the process that uses it):

* **uncontended**: acquire+release pairs per second in one process, on one name;
* **contended**: 8 processes, each in a loop of acquire, ``GET`` a Redis
  counter, ``SET`` it plus one, release. Sections per second over all of
  them, the time each acquire waited (p50, p99, max: a starved waiter
  shows in the max), and the median *hand-off*: from one holder calling
  release to the next holder's acquire returning, the time the lock itself
  costs each section when there is always someone waiting. The counter
  must equal the number of sections: a lock that let two in would lose
  increments, and the row says so.

Each figure is the median of three rounds, the kinds taking turns (for
contended, the whole median round, but with the lost increments of every
round; uncontended, each round is itself taken in ten turns of every kind).
A family module gives ``lock_maker(kind, endpoints)`` for its peers and raw
loops; our own strategies are opened by name from ``locks``.
Figures are printed and written as JSON; tests never assert them.
"""

from __future__ import annotations

import importlib
import itertools
import multiprocessing
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import redis

import locks
from locks import Backends
from lockshop.bench.output import say, write_json
from lockshop.table import format_table
from lockshop.turns import SideBySide, overall, side_by_side, take_turns
from shop.i18n import ENGLISH, N_, _, join, language

LEASE_MS = 10_000
CONTENDED_PROCESSES = 8
#: Modules whose ``lock_maker`` knows the peers of a family.
FAMILIES = ("lockshop.bench.redis_locks", "lockshop.bench.zookeeper_locks")

Maker = Callable[[str], tuple[Callable[[], object], Callable[[], object]]]
#: Every figure is the median of this many rounds, the kinds taking turns, so
#: that a slow moment of a shared machine does not land on one kind.
ROUNDS = 3
#: An uncontended round is taken in this many turns of every kind (see ``uncontended``).
UNCONTENDED_TURNS = 10
#: Two kinds measured side by side (``uncontended_side_by_side``) take this many turns.
SIDE_BY_SIDE_TURNS = 300
#: What ``lock_maker`` opened in this process, closed by ``close_opened``.
_opened: list[Callable[[], object]] = []


@dataclass(frozen=True)
class Endpoints:
    """Where the benchmark's servers are; the counter lives on ``redis_url``."""

    redis_url: str
    redis_urls: tuple[str, ...] = ()
    zk_hosts: str | None = None


@dataclass
class Figures:
    measure: str
    lock: str
    per_second: float
    p50_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    handoff_p50_ms: float | None = None
    lost_increments: int | None = None
    #: The longest wait of every round, not only of the median one: a bound on the
    #: wait must hold in all of them.
    max_ms_any_round: float | None = None
    #: Each round's rate, in the order the rounds ran: the kinds take turns within a
    #: round, so round n of two kinds ran minutes apart at most, and their ratio is the
    #: one to trust on a machine whose speed drifts.
    per_second_rounds: list[float] | None = None


@contextmanager
def servers_of_its_own(prefix: str) -> Iterator[Callable]:
    """A temporary folder, and ``start(ServerClass, name)`` that starts a server in it
    (``RedisServer``, ``ZooKeeperServer``): the servers stop (the stack unwinds)
    before the folder is removed."""
    with (tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True) as folder,
          ExitStack() as stack):
        yield lambda server_class, name: stack.enter_context(server_class(Path(folder), name))


def lock_maker(kind: str, endpoints: Endpoints) -> Maker:
    """A function name -> (acquire, release) for ``kind``, built in the calling process."""
    for module in FAMILIES:
        make = importlib.import_module(module).lock_maker(kind, endpoints)
        if make is not None:
            return make
    factory = locks.open_factory(kind, Backends(
        redis_url=endpoints.redis_url, redis_urls=endpoints.redis_urls,
        zk_hosts=endpoints.zk_hosts, lease_ms=LEASE_MS))
    _opened.append(factory.close)
    deadline = time.monotonic() + 10
    while not factory.available() and time.monotonic() < deadline:
        time.sleep(0.01)  # a ZooKeeper session is opened in the background

    def ours(name):
        lock = factory.lock(name, timeout=30)
        return lock.acquire, lock.release
    return ours


def opened(close: Callable[[], object]) -> None:
    """Remember something a family's ``lock_maker`` opened, to close it after the measure."""
    _opened.append(close)


def close_opened() -> None:
    while _opened:
        _opened.pop()()


def _one_pair(kind: str, endpoints: Endpoints) -> Callable[[], None]:
    """One acquire+release of a new ``kind`` lock, on a name of its own."""
    make, name = lock_maker(kind, endpoints), f"bench-{uuid.uuid4().hex[:8]}"

    def pair() -> None:
        acquire, release = make(name)
        acquire()
        release()
    return pair


def uncontended(kinds: tuple[str, ...], endpoints: Endpoints,
                seconds: float) -> dict[str, float]:
    """Each kind's pairs per second in one round of ``seconds`` each, the kinds taking
    ``UNCONTENDED_TURNS`` turns (``lockshop.turns`` says why)."""
    try:
        pairs = {kind: _one_pair(kind, endpoints) for kind in kinds}
        turns = take_turns(pairs, seconds, UNCONTENDED_TURNS)
    finally:
        close_opened()
    return {kind: overall(turns_of_kind).per_second for kind, turns_of_kind in turns.items()}


def uncontended_side_by_side(kind: str, peer: str, endpoints: Endpoints,
                             seconds: float) -> SideBySide:
    """``kind``'s uncontended pairs per second over ``peer``'s, in
    ``SIDE_BY_SIDE_TURNS`` turns of both (and of ``peer`` again, the control),
    ``seconds`` each: fine enough to tell two locks a few per cent apart."""
    try:
        return side_by_side(_one_pair(kind, endpoints), _one_pair(peer, endpoints),
                            _one_pair(peer, endpoints), seconds, SIDE_BY_SIDE_TURNS)
    finally:
        close_opened()


def side_by_side_goal(kind: str, peer: str, measured: SideBySide, *, at_least: float) -> str:
    """The goal line of an uncontended side-by-side measure, with its control."""
    return goal(_("%(kind)s uncontended / %(peer)s's, side by side in %(turns)s turns "
                  "(%(peer)s / %(peer)s: %(control)s)", kind=kind, peer=peer,
                  turns=SIDE_BY_SIDE_TURNS, control=f"{measured.control:.3f}"),
                measured.ratio, at_least=at_least)


def _contended_worker(kind: str, endpoints: Endpoints, name: str, ready,
                      seconds: float) -> tuple[list[float], list[tuple[float, float]]]:
    """Each acquire's wait, and each section's (acquired, release called) wall-clock times."""
    make = lock_maker(kind, endpoints)
    client = redis.Redis.from_url(endpoints.redis_url)
    client.ping()
    counter = f"{name}:counter"
    waits: list[float] = []
    sections: list[tuple[float, float]] = []
    # All start together once every process is up and connected: on a busy
    # machine, starting a process can take longer than any fixed head start.
    ready.wait()
    deadline = time.time() + seconds
    while time.time() < deadline:
        acquire, release = make(name)
        asked = time.perf_counter()
        acquire()
        acquired = time.time()
        waits.append(time.perf_counter() - asked)
        value = int(client.get(counter) or 0)  # the read-modify-write under the lock
        client.set(counter, value + 1)
        sections.append((acquired, time.time()))
        release()
    return waits, sections


def contended(kind: str, endpoints: Endpoints, seconds: float) -> Figures:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    context = multiprocessing.get_context("spawn")  # no state shared with this process
    with context.Manager() as manager, context.Pool(CONTENDED_PROCESSES) as pool:
        ready = manager.Barrier(CONTENDED_PROCESSES)
        results = pool.starmap(_contended_worker, [(kind, endpoints, name, ready, seconds)]
                               * CONTENDED_PROCESSES)
    waits = sorted(w for ws, _ in results for w in ws)
    sections = sorted(section for _, ss in results for section in ss)
    # Every process reads the same wall clock, so sections of different
    # processes can be put in one line: a hand-off is the gap between them.
    handoffs = [after[0] - before[1] for before, after in itertools.pairwise(sections)]
    counted = int(redis.Redis.from_url(endpoints.redis_url).get(f"{name}:counter") or 0)
    return Figures(N_("contended sections/s"), kind, round(len(waits) / seconds, 1),
                   p50_ms=round(1000 * statistics.median(waits), 2),
                   p99_ms=round(1000 * waits[int(0.99 * (len(waits) - 1))], 2),
                   max_ms=round(1000 * waits[-1], 2),
                   handoff_p50_ms=round(1000 * statistics.median(handoffs), 2),
                   lost_increments=len(waits) - counted)


def measure(endpoints: Endpoints, seconds: float, *, uncontended_kinds: tuple[str, ...],
            contended_kinds: tuple[str, ...]) -> list[Figures]:
    rounds: dict[str, list[float]] = {kind: [] for kind in uncontended_kinds}
    for number in range(1, ROUNDS + 1):
        say(_("uncontended, round %(number)s of %(rounds)s: %(kinds)s, in turns…",
              number=number, rounds=ROUNDS, kinds=join(uncontended_kinds)))
        for kind, rate_of_round in uncontended(uncontended_kinds, endpoints, seconds).items():
            rounds[kind].append(rate_of_round)
    figures = [Figures(N_("uncontended pairs/s"), kind, round(statistics.median(rates), 1),
                       per_second_rounds=[round(r, 1) for r in rates])
               for kind, rates in rounds.items()]
    contended_rounds: dict[str, list[Figures]] = {kind: [] for kind in contended_kinds}
    for number in range(1, ROUNDS + 1):
        for kind in contended_kinds:
            say(_("contended, %(processes)s processes, round %(number)s of %(rounds)s: %(kind)s…",
                  processes=CONTENDED_PROCESSES, number=number, rounds=ROUNDS, kind=kind))
            contended_rounds[kind].append(contended(kind, endpoints, seconds))
    # The round with the median throughput, whole (its waits belong to its
    # rate), but with the increments lost in every round: none may hide.
    figures += [replace(sorted(runs, key=lambda f: f.per_second)[len(runs) // 2],
                        lost_increments=sum(f.lost_increments for f in runs),
                        max_ms_any_round=max(f.max_ms for f in runs),
                        per_second_rounds=[f.per_second for f in runs])
                for runs in contended_rounds.values()]
    return figures


#: The table's columns, said in the reader's language (the JSON keeps the fields' names).
COLUMNS = (N_("measure"), N_("lock"), N_("per second"), N_("wait p50 ms"), N_("p99 ms"),
           N_("max ms"), N_("max ms, any round"), N_("hand-off p50 ms"), N_("lost increments"))


def report(title: str, figures: list[Figures], output: Path, seconds: float,
           ratios: Callable[[], list[str]], settings: dict | None = None) -> None:
    """Print the table and the ratios (``ratios()`` says them in the current language);
    write everything as JSON to ``output``, in English."""
    def show(value):
        return "-" if value is None else value

    print()
    print(format_table([_(c) for c in COLUMNS],
                       [(_(f.measure), f.lock, f.per_second, show(f.p50_ms), show(f.p99_ms),
                         show(f.max_ms), show(f.max_ms_any_round), show(f.handoff_p50_ms),
                         show(f.lost_increments))
                        for f in figures]))
    print()
    for line in ratios():
        print(line)
    with language(ENGLISH):
        ratios = ratios()
    write_json(output, {
        "benchmark": title, "seconds_per_measure": seconds,
        "contended_processes": CONTENDED_PROCESSES, "settings": settings or {},
        "figures": [asdict(f) for f in figures], "ratios": ratios})
    print(_("written to %(file)s", file=output))


def rate(figures: list[Figures], measure: str, kind: str) -> float:
    return figure(figures, measure, kind).per_second


def figure(figures: list[Figures], measure: str, kind: str) -> Figures:
    return next(f for f in figures if f.measure.startswith(measure) and f.lock == kind)


def round_ratios(figures: list[Figures], measure: str, kind: str, peer: str) -> list[float]:
    """``kind``'s rate over ``peer``'s, round by round (the two took turns in each)."""
    return [ours / theirs for ours, theirs in zip(figure(figures, measure, kind).per_second_rounds,
                                                  figure(figures, measure, peer).per_second_rounds,
                                                  strict=True)]


def goal(text: str, value: float, *, at_least: float | None = None,
         at_most: float | None = None, rounds: list[float] | None = None) -> str:
    """One line that says a goal, the figure measured and whether it is met; with
    ``rounds``, the figure of each round too."""
    met = (at_least is None or value >= at_least) and (at_most is None or value <= at_most)
    bound = (_("at least %(bound)s", bound=at_least) if at_least is not None
             else _("at most %(bound)s", bound=at_most))
    said = f"{value:.2f}"
    if rounds:
        said = _("%(value)s, rounds %(rounds)s", value=said,
                 rounds=join(f"{r:.2f}" for r in rounds))
    return _("%(goal)s: %(value)s (%(bound)s): %(verdict)s", goal=text, value=said,
             bound=bound, verdict=_("met") if met else _("NOT met"))
