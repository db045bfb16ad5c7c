"""The exercises, in order: what each asks, its checks, its reference.

Each exercise is a step of the articles' path (A0's from ``SETNX`` to a
reentrant hash in Lua, A4's watchdog and fencing, then A3's ZooKeeper
nodes): a skeleton to fill in, on the same base class and hooks as the
project's own lock of that kind, and a grader that runs the student's
class through the lessons it teaches, on servers of its own (its
``backend``). Checks are cumulative along a ``chain``: exercise N also runs
every check of the exercises before it on its chain, so a lock that passes N
is right for every step before it. An exercise's chain is its backend unless
it names one of its own (one that should not inherit the earlier steps). The
project's own locks are the references, and its broken ones the mutants
each exercise must catch (tests/test_exercises.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lockshop.exercises.checks import (
    contract,
    election_steps,
    job_steps,
    lockfree_steps,
    order_sale,
    redis_queue,
    redis_steps,
    redis_watch,
    redlock,
    row_locks,
    row_lock_jobs,
    rw_steps,
    sale,
    step_sale,
    table_steps,
    zk_reentry_steps,
    zookeeper_steps,
)
from lockshop.exercises.grading import Check
from shop.i18n import lazy_gettext

SKELETONS = Path(__file__).parent / "skeletons"

#: The servers a grading starts (``Grading``): one Redis, one ZooKeeper, five independent
#: Redis servers (``grading.REDLOCK_SERVERS``), or a database (``databases.SERVERS``: a
#: lock table's SQLite file, an order step's SQLite file or MariaDB database).
REDIS, ZOOKEEPER, REDLOCK = "redis", "zookeeper", "redlock"
SQLITE, MYSQL = "sqlite", "mysql"
#: A lock graded on a database is a lock table: its class extends the "database" family's
#: base (``locks.table_lock``), whichever database holds the table.
LOCK_FAMILIES = {SQLITE: "database", MYSQL: "database"}

#: What the student writes, so how the grader loads it and what judges it: a lock (a
#: ``DistributedLock`` on its backend's base), judged by the lock's contract, its chain's
#: steps and a sale across shop instances; a job guard (``shop.jobs.guards.JobGuard``), an
#: order step (``shop.orders.custom_steps.OrderStep``) or a leader election
#: (``locks.zk_election.Candidate``), judged by its own checks alone, the shop's jobs or
#: sale among them.
LOCK, JOB_GUARD, ORDER_STEP, ELECTION = "lock", "job guard", "order step", "leader election"


@dataclass(frozen=True)
class Exercise:
    id: str  # "3"
    file: str  # the skeleton's file name: "token_lock.py"
    title: str  # lazy: said in the reader's language
    #: The servers a grading starts, and for a lock the base its class must extend.
    backend: str
    articles: tuple[str, ...]
    #: What the student is asked to do, in a few sentences.
    asks: str
    #: The checks this step adds; ``checks()`` adds the earlier steps' and, for a lock,
    #: the contract and the sale.
    own_checks: tuple[Check, ...]
    #: The project's own code that does what is asked, the reference that must pass: a
    #: strategy's name, or ``module:Name`` where it is no strategy.
    reference: str
    #: The exercises whose checks are cumulative: N runs every earlier one's on its chain.
    #: Its backend unless given (an exercise that should not inherit the earlier steps).
    chain: str = ""
    writes: str = LOCK
    #: A lock's sale, where its backend's would not fit (a lock table's hint speaks of
    #: its row).
    sale: Check | None = None

    def __post_init__(self) -> None:
        if not self.chain:
            object.__setattr__(self, "chain", self.backend)

    @property
    def lessons(self) -> tuple[str, ...]:
        """The lessons it grades: its own steps', and for the first lock of a chain (whose
        step is to make a lock at all) the contract's and the sale's."""
        first = min(int(e.id) for e in EXERCISES.values() if e.chain == self.chain)
        checks = self.own_checks
        if self.writes == LOCK and int(self.id) == first:
            checks = (*contract.CHECKS, *checks, *self._sale())
        return tuple(dict.fromkeys(check.lesson for check in checks))

    @property
    def lock_family(self) -> str:
        """For a lock, the family whose base its class must extend ("redis", "database")."""
        return LOCK_FAMILIES.get(self.backend, self.backend)

    @property
    def skeleton(self) -> Path:
        return SKELETONS / self.file

    def checks(self) -> tuple[Check, ...]:
        """Every check this exercise runs, in order: for a lock, the contract; every earlier
        step of its chain and its own; for a lock, the sale across instances."""
        earlier = [e for e in EXERCISES.values()
                   if e.chain == self.chain and int(e.id) <= int(self.id)]
        steps = tuple(check for e in earlier for check in e.own_checks)
        if self.writes != LOCK:
            return steps
        return (*contract.CHECKS, *steps, *self._sale())

    def _sale(self) -> tuple[Check, ...]:
        if self.sale is not None:
            return (self.sale,)
        return sale.checks(self.backend, still_held_written=self.asks_still_held)

    @property
    def asks_still_held(self) -> bool:
        """Whether its skeleton has the student write ``_still_held()`` (hints name it
        only then)."""
        return "_still_held" in self.skeleton.read_text()


_LIST = (
    Exercise("1", "setnx_lock.py", lazy_gettext("A lock with SETNX, released with DEL"),
             REDIS, ("A0",),
             lazy_gettext("Take the lock with one SETNX of the lock's key and give it back "
                          "with DEL. It must keep every other thread and process out while "
                          "it is held."),
             (), "redis_setnx"),
    Exercise("2", "lease_lock.py", lazy_gettext("A lease: SET NX PX in one command"), REDIS,
             ("A0", "A1", "A4"),
             lazy_gettext("A holder that dies must not keep the lock forever: give the key an "
                          "expiry, in the same command that creates it."),
             redis_steps.BASICS, "redis_plain_del"),
    Exercise("3", "token_lock.py",
             lazy_gettext("A token per holder, and a Lua compare-and-delete"), REDIS,
             ("A0", "A2", "A4"),
             lazy_gettext("Write your token into the key, and release only a key that still "
                          "holds it: the comparison and the delete in one Lua script."),
             redis_steps.TOKEN, "redis"),
    Exercise("4", "reentrant_lock.py",
             lazy_gettext("A reentrant lock: a hash of owner to count, in Lua"), REDIS, ("A0",),
             lazy_gettext("Let the holder take its own lock again: a hash of owner -> count, "
                          "counted up on acquire and down on release, deleted at zero; each "
                          "step one Lua script."),
             redis_steps.REENTRANT, "redis_reentrant"),
    Exercise("5", "watchdog_lock.py",
             lazy_gettext("A watchdog that renews the lease while the holder lives"), REDIS,
             ("A4",),
             lazy_gettext("Keep the lease short and renew it from a thread while the lock is "
                          "held, as Redisson's watchdog does; stop renewing at the release."),
             redis_steps.WATCHDOG, "redisson"),
    Exercise("6", "fenced_lock.py", lazy_gettext("A fencing token the shop's write checks"),
             REDIS, ("A4",),
             lazy_gettext("Hand out a number that grows with every acquisition, so that the "
                          "shop can refuse the late write of a holder that was paused past "
                          "its lease."),
             redis_steps.FENCING, "redisson"),
    Exercise("7", "ephemeral_lock.py", lazy_gettext("A ZooKeeper lock on one ephemeral node"),
             ZOOKEEPER, ("A0", "A1", "A3"),
             lazy_gettext("Lock by creating one ephemeral node, wait by watching it: the node "
                          "goes with its holder's session, so a dead holder frees the lock by "
                          "itself."),
             zookeeper_steps.EPHEMERAL, "zk_simple"),
    Exercise("8", "queue_lock.py",
             lazy_gettext("The fair lock: ephemeral sequential nodes, each watching the one "
                          "ahead"), ZOOKEEPER, ("A0", "A3", "A4"),
             lazy_gettext("Queue as an ephemeral sequential node; hold the lock when yours is "
                          "the lowest; otherwise watch only the node just ahead of yours, and "
                          "look again when it goes."),
             zookeeper_steps.QUEUE, "zk_fair"),
    # Steps off the path: a Redis lock each, which inherits none of exercises 1-6's checks.
    Exercise("9", "watch_lock.py",
             lazy_gettext("The token lock released with WATCH and MULTI/EXEC, retried on a "
                          "conflict"), REDIS, ("A2",),
             lazy_gettext("Release without Lua: WATCH the key, GET it, and delete it in "
                          "MULTI/DEL/EXEC only if its value is your token. When EXEC is refused, "
                          "the key changed after your GET: read it again before deciding."),
             (*redis_watch.WATCH_TOKEN, *redis_watch.CONFLICT),
             "locks.redis_watch:WatchReleaseLock", chain="redis-watch"),
    Exercise("10", "queued_lock.py",
             lazy_gettext("A queued Redis lock: one wake-up per release, instead of polling"),
             REDIS, ("A1", "A4"),
             lazy_gettext("A refused waiter joins a queue and sleeps with BLPOP on a list of "
                          "its own; a release wakes the waiter at the head, and a free lock "
                          "is the head's. A waiter that gives up leaves the queue."),
             (*redis_steps.TOKEN, *redis_queue.QUEUE), "redis_fair", chain="redis-queue"),
    Exercise("11", "majority_lock.py", lazy_gettext("Redlock: a majority of five Redis servers"),
             REDLOCK, ("A1", "A4"),
             lazy_gettext("Ask five independent servers at once; hold the lock when three said "
                          "yes in time, and trust it only for the lease less the time spent "
                          "asking, less the clocks' drift. A server that does not answer costs "
                          "a short timeout, and an attempt that fails unlocks every server."),
             (*redlock.MAJORITY, *redlock.VALIDITY, *redlock.FORGETFUL), "redlock"),
    Exercise("12", "reentrant_queue_lock.py",
             lazy_gettext("ZooKeeper re-entry: the owner's identity in its node"), ZOOKEEPER,
             ("A0", "A4"),
             lazy_gettext("Write who holds the lock into its node; when the lowest node is your "
                          "own owner's, enter again without queueing, and count: the node goes "
                          "at the release that balances the first acquire. Another owner, even "
                          "a thread of the same process, waits."),
             (*zookeeper_steps.EPHEMERAL, *zookeeper_steps.QUEUE,
              *zk_reentry_steps.REENTRY), "zk_fair", chain="zk-reentry"),
    Exercise("13", "rw_lock.py", lazy_gettext("A ZooKeeper read/write lock"), ZOOKEEPER,
             ("A3",),
             lazy_gettext("Readers and writers queue in one line of sequential nodes: a writer "
                          "waits for every node ahead of it, a reader only for the writers ahead "
                          "of it. So readers share, and a reader that arrives after a waiting "
                          "writer waits behind it."),
             rw_steps.READ_WRITE, "zk_rw", chain="zk-rw"),
    Exercise("14", "election.py",
             lazy_gettext("Leader election on ZooKeeper: a cluster job that runs once"),
             ZOOKEEPER, ("A1", "A3", "A4"),
             lazy_gettext("Stand for election with an ephemeral sequential node: the lowest "
                          "leads, each other candidate watches the one just ahead. The leader "
                          "asks ZooKeeper before it acts; when its session ends, the next one "
                          "leads. Three shop instances then run their jobs with your election."),
             election_steps.ELECTION, "locks.zk_election:LeaderElection", chain="election",
             writes=ELECTION),
    Exercise("15", "job_guard.py",
             lazy_gettext("A job guard: a scheduled job that runs once in the cluster"), REDIS,
             ("A0", "A1"),
             lazy_gettext("Every instance fires the same jobs at the same times: guard each run "
                          "with one lock for the whole cluster, named for the job and tried "
                          "once, so that one instance runs each fire time and the others skip "
                          "it."),
             job_steps.ONCE, "shop.jobs.custom:StrategyLockGuard", chain="jobs",
             writes=JOB_GUARD),
    Exercise("16", "rechecked_guard.py",
             lazy_gettext("A job guard that checks its lock again before each write"), REDIS,
             ("A2",),
             lazy_gettext("A run can outlive its lock's lease: check, last in each write's "
                          "transaction, that the lock is still yours, so that a run whose lock "
                          "another instance has taken writes nothing."),
             job_steps.RECHECK, "shop.jobs.custom:StrategyLockGuard", chain="jobs",
             writes=JOB_GUARD),
    Exercise(
        "17", "lock_row.py", lazy_gettext("A lock row with an expiry, in a lock table"),
        SQLITE, ("A1",),
        lazy_gettext("Lock by inserting a row whose unique key is the lock's name, with the "
                     "time its lease ends; take over a row whose lease has run out; release by "
                     "deleting only your own row. A holder that dies then frees the lock by "
                     "itself, once its lease is over."),
        table_steps.CHECKS, "table", chain="lock-table", sale=table_steps.SALE),
    Exercise(
        "18", "for_update_step.py",
        lazy_gettext("SELECT ... FOR UPDATE through a unique index, held until the commit"),
        MYSQL, ("A1",),
        lazy_gettext("Write the order step in SQL on MariaDB: lock the product's row with the "
                     "read that decides (FOR UPDATE, through its primary key), and write the "
                     "stock and the order in that same transaction, so that the commit is what "
                     "releases the row."),
        (*row_locks.CHECKS, step_sale.SALE), "shop.orders.transactions:place_for_update", chain="for-update",
        writes=ORDER_STEP),
    Exercise(
        "19", "optimistic_order.py", lazy_gettext("Optimistic locking: a version column"),
        SQLITE, ("A1",),
        lazy_gettext("Take no lock: read the stock with the product's version, and write only "
                     "WHERE the version is still the one you read, bumping it in the same "
                     "UPDATE; when that changed no row, someone sold meanwhile: read again."),
        (*lockfree_steps.OPTIMISTIC, order_sale.SALE_C07),
        "shop.orders.transactions:place_optimistic", chain="version",
        writes=ORDER_STEP),
    Exercise(
        "20", "atomic_order.py", lazy_gettext("You may not need a lock: one conditional UPDATE"),
        SQLITE, (),
        lazy_gettext("Put the check in the write: one UPDATE takes the stock only WHERE "
                     "enough is left, and one claims a seat only WHERE no order has it; sell "
                     "only when it changed a row."),
        (*lockfree_steps.ATOMIC, order_sale.SALE_C25),
        "shop.orders.transactions:place_atomic", chain="conditional",
        writes=ORDER_STEP),
    Exercise(
        "21", "idempotent_order.py",
        lazy_gettext("The retried order: one Idempotency-Key, one order"), SQLITE, (),
        lazy_gettext("A buyer whose answer was lost retries with the same key: look the key "
                     "up first, write it beside the order in the order's own transaction, and "
                     "when its insert fails, answer with the order that won."),
        (*lockfree_steps.IDEMPOTENT, order_sale.RETRIED),
        "lockshop.exercises.order_references:place_atomic_once", chain="idempotent",
        writes=ORDER_STEP),
    Exercise(
        "22", "quartz_guard.py",
        lazy_gettext("Quartz's lock row: a job guard that decides under SELECT ... FOR UPDATE"),
        MYSQL, ("A1",),
        lazy_gettext("Before deciding whether a fire time has run, take the job's row in the "
                     "lock table with SELECT ... FOR UPDATE, and write your claim in that same "
                     "transaction: the other schedulers wait at their read, then find the fire "
                     "time taken and skip it."),
        row_lock_jobs.ROW_LOCK, "shop.jobs.guards:RowLockGuard", chain="quartz",
        writes=JOB_GUARD),
)
EXERCISES: dict[str, Exercise] = {exercise.id: exercise for exercise in _LIST}


def find(name: str) -> Exercise:
    """An exercise by its number ("3") or its file's name ("token_lock", "token_lock.py")."""
    for exercise in EXERCISES.values():
        if name in (exercise.id, exercise.file, exercise.file.removesuffix(".py")):
            return exercise
    raise KeyError(name)


def listing() -> list[dict]:
    """Every exercise as the console's Exercises page and the room list it."""
    return [{"id": e.id, "title": str(e.title), "backend": e.backend,
             "lessons": list(e.lessons), "articles": list(e.articles), "asks": str(e.asks),
             "file": e.file}
            for e in EXERCISES.values()]


__all__ = ["EXERCISES", "Exercise", "find", "listing"]
