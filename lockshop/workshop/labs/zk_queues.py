"""Labs of ZooKeeper's queue locks (A0, A3, A4): the herd and the queue that
avoids it, arrival order, a waiter that looks again, readers that share,
a writer they cannot starve, and re-entry.
"""

from __future__ import annotations

import json
import threading
import time

import locks
from lockshop.cluster.holder import HELD, Holder
from lockshop.cluster.zookeeper_servers import four_letter_word
from lockshop.workshop.staging import steps
from lockshop.workshop.staging.record import Lab
from shop.i18n import N_, _, yes_no

# --- C19: the herd, and the queue that avoids it ------------------------------------------------

WAITERS = 5


def stage_herd(run) -> None:
    zk = run.parts.zookeeper()
    for half, strategy, how, expected, agrees in (
            ("broken", "zk_simple", _("every waiter watches the one lock node"),
             _("every release wakes every waiter still waiting, the herd effect: 5+4+3+2+1, "
               "about 15"),
             lambda wakeups: wakeups >= 12),
            ("fix", "zk_fair", _("sequential nodes, each waiter watching the one just before "
                                 "it"),
             _("each release wakes one waiter: 5"), lambda wakeups: wakeups == WAITERS)):
        getattr(run, half)(strategy, how)
        wakeups, served = waiters_take_turns(
            zk, lambda: run.open_locks(strategy, zk_hosts=zk.address))
        run.check(_("a holder and %(waiters)s waiters, each with its own session; they take "
                    "turns", waiters=WAITERS),
                  expected=expected,
                  observed=_("%(wakeups)s wake-ups (%(served)s served)", wakeups=wakeups,
                             served=served),
                  agrees=agrees(wakeups) and served == WAITERS)


def waiters_take_turns(zk, open_factory, waiters: int = WAITERS) -> tuple[int, int]:
    """A holder and ``waiters`` waiters, each on a factory (a session) of its own from
    ``open_factory()``, take turns at the lock "herd". Returns how many times a
    waiter was woken by a watch, and how many got the lock.

    Nobody releases until every waiter still waiting watches again, as ZooKeeper
    itself lists them (``wchp``): so the count is exact, one wake-up per watcher
    per release, and never short because a waiter was still racing."""
    holder_factory = open_factory()
    holder = holder_factory.lock("herd")
    holder.acquire()
    factories = [open_factory() for _ in range(waiters)]
    waiting = {factory.client.client_id[0] for factory in factories}  # their sessions
    before = _wakeups(holder_factory.strategy.name)
    served: list[int] = []

    def all_watch() -> bool:
        return waiting <= sessions_watching(zk)

    def waiter(factory) -> None:
        with factory.lock("herd", timeout=30):
            waiting.discard(factory.client.client_id[0])
            served.append(1)
            _wait_until(all_watch, "the waiters left to watch again")

    threads = [threading.Thread(target=waiter, args=(f,)) for f in factories]
    for thread in threads:
        thread.start()
    _wait_until(all_watch, "every waiter to try once and watch")
    holder.release()
    for thread in threads:
        thread.join(30)
    return _wakeups(holder_factory.strategy.name) - before, len(served)


def sessions_watching(zk) -> set[int]:
    """The sessions that watch a node on the server ``zk`` now (``wchp``)."""
    listing = four_letter_word(zk.port, "wchp", zk.host.address)
    return {int(line, 16) for line in map(str.strip, listing.splitlines())
            if line.startswith("0x")}


def _wakeups(strategy: str) -> int:
    return locks.metrics.snapshot().get(strategy, {}).get("wakeups", 0)


# --- C20: first come, first served ---------------------------------------------------------------

def stage_arrival_order(run) -> None:
    """The first waiter is descheduled (SIGSTOP) just as the lock frees; a newcomer asks."""
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "zk_simple", _("waiters race to create the one node when it goes")),
            ("fix", "zk_fair", _("waiters queue as sequential nodes; the lock passes down the "
                                 "queue"))):
        getattr(run, half)(strategy, how)
        held_lock = run.open_locks(strategy, zk_hosts=zk.address).lock("product:1")
        held_lock.acquire()
        first = Holder("--strategy", run.version(strategy), "--backends",
                       json.dumps({"zk_hosts": zk.address}), "--name", "product:1",
                       "--timeout", "20", "--say-waiting", "--hold-seconds", "0.2")
        try:
            first.next_line(30)  # "waiting": it is about to ask
            time.sleep(0.5)  # it has asked, and waits (watching)
            first.pause()
            held_lock.release()
            newcomer = run.open_locks(strategy, zk_hosts=zk.address).lock("product:1")
            jumped = newcomer.acquire(blocking=False)
            first.resume()
            if jumped:
                newcomer.release()
            said = (first.next_line(30) or "").split(" ", 1)[0]
            first.process.wait(10)
        finally:
            first.kill()
        observed = _("the newcomer got in first: %(jumped)s; the first waiter then: %(said)s",
                     jumped=yes_no(jumped), said=steps.said(said) if said else _("nothing"))
        action = _("a waiter queues first; it is paused as the holder releases; a newcomer "
                   "asks")
        if half == "broken":
            run.check(action, expected=_("the newcomer gets in ahead of the first waiter"),
                      observed=observed, agrees=jumped and said == HELD)
        else:
            run.check(action, expected=_("the lock is the first waiter's, paused or not: the "
                                         "newcomer waits its turn"), observed=observed,
                      agrees=not jumped and said == HELD)


# --- C38: a woken waiter looks again -------------------------------------------------------------

#: How long W1 waits before it gives up.
W1_GIVES_UP_S = 5


def stage_look_again(run) -> None:
    """H holds; W1 queues and gives up after 5 s; W2 queued behind W1 is woken by that.

    W1 must still be queued when W2 has set its watch on W1's node: both are made (and
    connected) before either asks, and W1 waits far longer than W2's few requests need
    on a busy machine. W2 must be asleep on that watch when W1's node goes, not between
    two looks: a waiter also looks at the queue by itself every ``fallback_poll`` (a
    second, the net under a lost watch), and a node that went just before such a look is
    never a wake-up, only a shorter queue. With W1's five seconds a whole number of
    W2's polls, a loaded machine put W1's give-up right there (the broken W2 then found
    the holder ahead and stayed out). So here W2 waits on its watch alone."""
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "zk_fair_trusting", _("a waiter woken by any deletion ahead of it "
                                             "takes the lock")),
            ("fix", "zk_fair", _("a waiter woken by a deletion looks at the queue again"))):
        getattr(run, half)(strategy, how)
        holder = run.open_locks(strategy, zk_hosts=zk.address).lock("product:1")
        holder.acquire()
        inspector = run.open_locks("zk_fair", zk_hosts=zk.address)
        queue = lambda: inspector.client.get_children("/lockshop/fair/product:1")  # noqa: E731
        w1 = run.open_locks(strategy, zk_hosts=zk.address).lock("product:1", timeout=W1_GIVES_UP_S)
        w2 = run.open_locks(strategy, zk_hosts=zk.address).lock("product:1", timeout=30)
        w2.fallback_poll = 60.0  # wakes by its watch only (see above)
        w2_holds = threading.Event()
        gave_up = threading.Thread(target=w1.acquire)
        gave_up.start()
        _wait_until(lambda: len(queue()) == 2)

        def second() -> None:
            if w2.acquire():
                w2_holds.set()
        threading.Thread(target=second, daemon=True).start()
        _wait_until(lambda: len(queue()) == 3)
        gave_up.join()
        left = len(queue())
        run.check(_("W1 queues behind the holder, W2 behind W1; W1 gives up after %(s)s s",
                    s=W1_GIVES_UP_S),
                  expected=_("W1 deletes its own node: it would block the queue otherwise"),
                  observed=_("nodes left in the queue: %(left)s (the holder's and W2's)",
                             left=left),
                  agrees=left == 2)
        # The broken W2 is expected in: wait for it as long as a busy machine may need
        # (a hog delayed its watch past one second). The fixed W2 is expected to stay
        # out: one second of not entering shows it.
        entered = w2_holds.wait(10.0 if half == "broken" else 1.0)
        observed = _("W2 holds: %(w2)s; the holder holds: %(holder)s",
                     w2=_("yes") if entered else _("no"),
                     holder=_("yes") if holder.held else _("no"))
        if half == "broken":
            run.check(_("W2 is woken by W1's node going"),
                      expected=_("W2 takes it for the lock: W2 and the holder hold it at once"),
                      observed=observed, agrees=entered and holder.held)
        else:
            run.check(_("W2 is woken by W1's node going"),
                      expected=_("W2 looks again, sees the holder ahead, and waits"),
                      observed=observed, agrees=not entered and holder.held)
        holder.release()
        w2_holds.wait(5)
        if w2.held:
            w2.release()



def _wait_until(condition, what: str = "the queue to form", seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the lab waited {seconds:g} s for {what}")
        time.sleep(0.01)


# --- C21: readers that share ------------------------------------------------------------

READERS = 3
READ_S = 0.3


def stage_read_write(run) -> None:
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "zk_fair", _("one exclusive lock: a stocktake takes it like a sale")),
            ("fix", "zk_rw", _("a read/write lock: stocktakes take the read lock and share "
                               "it"))):
        getattr(run, half)(strategy, how)
        factories = [run.open_locks(strategy, zk_hosts=zk.address) for _ in range(READERS + 1)]
        held: list[tuple[float, float]] = []
        start = threading.Barrier(READERS)

        def reader(factory) -> None:
            lock = factory.read_lock("product:1", timeout=10)
            start.wait()
            with lock:
                began = time.monotonic()
                time.sleep(READ_S)
                held.append((began, time.monotonic()))  # both ends inside the hold

        threads = [threading.Thread(target=reader, args=(f,)) for f in factories[:READERS]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        together = max(sum(b <= t < e for b, e in held) for t, _ in held)
        span = max(e for _, e in held) - min(b for b, _ in held)
        observed = _("at most %(together)s held it at once; all done in %(span)s s",
                     together=together, span=f"{span:.2f}")
        action = _("%(readers)s stocktakes ask for the read lock at once, each reading for "
                   "%(seconds)s s", readers=READERS, seconds=f"{READ_S:g}")
        if half == "broken":
            run.check(action,
                      expected=_("one at a time: about %(seconds)s s",
                                 seconds=f"{READERS * READ_S:g}"),
                      observed=observed, agrees=together == 1)
        else:
            run.check(action,
                      expected=_("all %(readers)s read together: about %(seconds)s s",
                                 readers=READERS, seconds=f"{READ_S:g}"),
                      observed=observed, agrees=together == READERS)
            _writer_waits_for_readers(run, factories)


def _writer_waits_for_readers(run, factories) -> None:
    readers = [f.read_lock("product:1") for f in factories[:2]]
    for lock in readers:
        lock.acquire()
    writer = factories[READERS].lock("product:1", timeout=0.3)
    refused = not writer.acquire()
    for lock in readers:
        lock.release()
    granted = factories[READERS].lock("product:1", timeout=5).acquire()
    run.check(_("a sale asks for the write lock while two stocktakes read"),
              expected=_("it waits for the readers, and gets the lock when they are done"),
              observed=_("refused while they read: %(refused)s; granted after: %(granted)s",
                         refused=yes_no(refused), granted=yes_no(granted)),
              agrees=refused and granted)


# --- C39: a writer that readers cannot starve ---------------------------------------------------

def stage_writer_not_starved(run) -> None:
    """A stocktake reads; a sale asks to write; more stocktakes keep arriving, each
    overlapping the one before, for 1.5 s.

    The fix is judged by order, not by the clock: the writer goes in before every reader
    that came after it (and none of them went straight in). How long it waited is shown;
    a machine with a core kept busy made the fixed writer's wait 0.8 s where it is 0.4."""
    redis_server, = run.parts.redis()
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "redis_rw_readers_first", _("readers go in whenever no writer holds "
                                                   "the lock")),
            ("fix", "zk_rw", _("readers queue with writers: one that arrives after a waiting "
                               "writer waits behind it"))):
        getattr(run, half)(strategy, how)
        factory = run.open_locks(strategy, redis_url=redis_server.url, zk_hosts=zk.address,
                                 lease_ms=10_000)
        first = factory.read_lock("product:1")
        first.acquire()
        began = time.monotonic()
        writer_waited: list[float] = []
        #: Who went in, in order, after the first reader: "writer" or "reader".
        entered: list[str] = []

        def writer() -> None:
            lock = factory.lock("product:1", timeout=10)
            asked = time.monotonic()
            lock.acquire()
            entered.append("writer")
            writer_waited.append(time.monotonic() - asked)
            lock.release()

        threading.Thread(target=writer).start()
        time.sleep(0.2)  # the writer waits for the first reader
        overtook, readers = [], []

        def reader() -> None:
            lock = factory.read_lock("product:1", timeout=10)
            got_in = lock.acquire(blocking=False)
            overtook.append(got_in and not writer_waited)
            if not got_in:
                lock.acquire()
            entered.append("reader")
            time.sleep(0.3)
            lock.release()

        first_released = False
        while time.monotonic() - began < 1.7:  # a reader every 100 ms, each reading 300 ms
            readers.append(threading.Thread(target=reader))
            readers[-1].start()
            time.sleep(0.1)
            if not first_released and time.monotonic() - began > 0.4:
                first.release()
                first_released = True
        for thread in readers:
            thread.join()
        _wait_until(lambda: writer_waited, "the writer")
        observed = _("readers that went ahead of the waiting writer: %(overtook)s of "
                     "%(readers)s; the writer waited %(waited)s s", overtook=sum(overtook),
                     readers=len(overtook), waited=f"{writer_waited[0]:.1f}")
        action = _("a reader holds; a writer asks; a reader arrives every 100 ms, each "
                   "reading 300 ms")
        if half == "broken":
            run.check(action, expected=_("every new reader goes ahead: the writer waits until "
                                         "the readers stop coming (over 1.5 s)"),
                      observed=observed,
                      agrees=sum(overtook) >= len(overtook) - 1 and writer_waited[0] > 1.4)
        else:
            run.check(action, expected=_("no reader goes ahead of the writer: it gets the lock "
                                         "once the first reader is done (at about 0.4 s)"),
                      observed=observed,
                      agrees=sum(overtook) == 0 and entered[0] == "writer")


# --- C29: the same owner, again ---------------------------------------------------------------

def stage_zk_reentrant(run) -> None:
    zk = run.parts.zookeeper()
    for half, strategy, how in (
            ("broken", "zk_simple", _("one node, created by whoever asks: no owner is "
                                      "remembered")),
            ("fix", "zk_fair", _("the owner is remembered with its node: it may enter "
                                 "again"))):
        getattr(run, half)(strategy, how)
        factory = run.open_locks(strategy, zk_hosts=zk.address)
        outer = factory.lock("product:1")
        outer.acquire()
        inner = factory.lock("product:1", timeout=0.3)
        again, waited = steps.timed_acquire(inner)
        observed = steps.asked(again, waited)
        action = _("the holder asks for product:1 again (an inner call, timeout 0.3 s)")
        if half == "broken":
            run.check(action, expected=_("it waits for its own node, and gives up"),
                      observed=observed, agrees=not again)
            outer.release()
            continue
        run.check(action, expected=_("granted at once: the same owner"), observed=observed,
                  agrees=again and waited < 0.3)
        inner.release()
        other = run.open_locks(strategy, zk_hosts=zk.address).lock("product:1", timeout=0.2)
        still = not other.acquire()
        outer.release()
        freed = other.acquire()
        run.check(_("the inner call releases; then the outer one; another owner asks each "
                    "time"),
                  expected=_("held after the inner release, free after the outer one"),
                  observed=_("still held after the inner: %(still)s; free after the outer: "
                             "%(freed)s", still=yes_no(still), freed=yes_no(freed)),
                  agrees=still and freed)
        other.release()

LABS = (
    Lab("C19", "herd", N_("The herd effect: the simple ZooKeeper lock wakes every waiter on "
        "every release; the sequential one wakes one"), ("A1", "A3"), ("zookeeper",), 3,
        stage_herd),
    Lab("C20", "arrival_order", N_("Sequential nodes serve waiters first come, first served; "
        "the simple lock lets a newcomer jump the queue"), ("A0", "A3", "A4"), ("zookeeper",), 3,
        stage_arrival_order),
    Lab("C38", "zk_fair_trusting", N_("A woken waiter must look at the queue again; a waiter that "
        "times out removes its own node"), ("A3", "A4"), ("zookeeper",), 3, stage_look_again),
    Lab("C21", "read_write", N_("A read/write lock lets readers share while a writer waits"),
        ("A3",), ("zookeeper",), 3, stage_read_write),
    Lab("C39", "redis_rw_readers_first", N_("A waiting writer is not starved by readers that "
        "arrive after it"), ("A3",), ("redis", "zookeeper"), 5, stage_writer_not_starved),
    Lab("C29", "zk_reentrant", N_("ZooKeeper re-entry: the owner kept with the node lets it enter "
        "again"), ("A0", "A4"), ("zookeeper",), 2, stage_zk_reentrant),
)
