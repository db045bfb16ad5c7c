"""The strategies: every lock this package offers, in teaching order.

Names are stable: the API, the CLI, reports and tests use them.
"""

from __future__ import annotations

from .registry import Strategy, register


def N_(text: str) -> str:  # noqa: N802 - gettext's name for "mark only"
    """Marks a summary or a failure mode for the message catalog (pybabel finds ``N_``).
    The locks never import the shop, where translation lives: whoever shows one translates
    it."""
    return text


NONE = register(Strategy(
    name="none",
    family="none",
    summary=N_("No guard: the read-check-write runs unprotected."),
    correct_across_instances=False,
    factory="locks.no_lock:NoLockFactory",
    failure_mode=N_("Concurrent buyers read the same stock and each writes stock - 1: "
                    "lost updates, then overselling."),
))

LOCAL = register(Strategy(
    name="local",
    family="in-process",
    summary=N_("A threading.Lock per product, per process."),
    correct_across_instances=False,
    correct_within_one_process=True,
    factory="locks.local_lock:LocalLockFactory",
    failure_mode=N_("Correct inside one process; each instance has its own locks, "
                    "so several instances overlap and oversell."),
))

TABLE = register(Strategy(
    name="table",
    family="database",
    summary=N_("A row in a lock table with a unique key: insert to lock, delete to unlock; "
            "a lease lets a crashed holder's lock be taken over; fencing tokens."),
    correct_across_instances=True,
    factory="locks.table_lock:TableLockFactory",
    requires=("database",),
    failure_mode=N_("A holder paused past its lease overlaps the next holder; fencing tokens "
                    "turn its late write into a rejected stale write."),
))

TABLE_NO_EXPIRY = register(Strategy(
    name="table_no_expiry", family="database-broken",
    summary=N_("A row with a unique key: insert to lock, delete to unlock; no expiry column."),
    correct_across_instances=False, factory="locks.table_broken:NoExpiryTableFactory",
    requires=("database",),
    failure_mode=N_("A holder that dies before its delete leaves its row: every later order for "
                    "the product waits and gets 503, until a person deletes the row."),
))

# --- Redis, broken on purpose: each fails in its own, reproducible way ----------

REDIS_SETNX = register(Strategy(
    name="redis_setnx", family="redis-broken",
    summary=N_("SETNX key token; DEL to release. No expiry."),
    correct_across_instances=False, factory="locks.redis_broken:SetnxNoExpiryFactory",
    requires=("redis",),
    failure_mode=N_("A holder that dies in its critical section never releases: every later "
                    "order for the product waits and gets 503 until an admin deletes the key."),
))

REDIS_SETNX_EXPIRE = register(Strategy(
    name="redis_setnx_expire", family="redis-broken",
    summary=N_("SETNX, then EXPIRE as a second command."),
    correct_across_instances=False, factory="locks.redis_broken:SetnxThenExpireFactory",
    requires=("redis",),
    failure_mode=N_("A crash between SETNX and EXPIRE leaves a lock that never expires "
                    "(fault hook crash_after_setnx)."),
))

REDIS_PLAIN_DEL = register(Strategy(
    name="redis_plain_del", family="redis-broken",
    summary=N_("SET NX PX, but released by a plain DEL without checking the owner."),
    correct_across_instances=False, factory="locks.redis_broken:PlainDelFactory",
    requires=("redis",),
    failure_mode=N_("A holder slower than the lease deletes the next holder's lock: two "
                    "holders at once, and an oversell."),
))

REDIS_GET_DEL = register(Strategy(
    name="redis_get_del", family="redis-broken",
    summary=N_("SET NX PX; release by GET, compare, then DEL: two commands."),
    correct_across_instances=False, factory="locks.redis_broken:GetThenDelFactory",
    requires=("redis",),
    failure_mode=N_("If the lease expires between GET and DEL, the DEL removes someone "
                    "else's lock (fault hook pause_before_del holds the window open)."),
))

REDIS_REENTRANT_DEL = register(Strategy(
    name="redis_reentrant_del", family="redis-broken",
    summary=N_("Reentrant (a hash of owner to count), but released by DEL."),
    correct_across_instances=False, factory="locks.redis_broken:ReentrantDeleteFactory",
    requires=("redis",),
    failure_mode=N_("A holder that re-enters frees the whole lock at its inner release: the "
                    "outer section runs unlocked and another holder walks in."),
))

REDIS_REENTRANT_STEPS = register(Strategy(
    name="redis_reentrant_steps", family="redis-broken",
    summary=N_("Reentrant acquire as separate commands: EXISTS, HSET, PEXPIRE."),
    correct_across_instances=False, factory="locks.redis_broken:ReentrantInStepsFactory",
    requires=("redis",),
    failure_mode=N_("Two owners that both see EXISTS say 0 both HSET their name: two holders "
                    "(fault hook pause_after_exists holds the window open)."),
))

REDIS_REENTRANT_THREAD_ID = register(Strategy(
    name="redis_reentrant_thread_id", family="redis-broken",
    summary=N_("Reentrant (a hash of owner to count, in Lua), the owner named by thread id."),
    correct_across_instances=False, factory="locks.redis_broken:ThreadIdOwnerFactory",
    requires=("redis",),
    failure_mode=N_("A thread that ends holding the lock leaves it to the next thread given "
                    "its id: Python reuses thread ids, and that thread re-enters as the owner."),
))

REDIS_RW_READERS_FIRST = register(Strategy(
    name="redis_rw_readers_first", family="redis-broken",
    summary=N_("A read/write lock that lets readers in whenever no writer holds it."),
    correct_across_instances=False, factory="locks.redis_broken:ReadersFirstFactory",
    requires=("redis",),
    failure_mode=N_("Readers that keep arriving while a writer waits go ahead of it: as long "
                    "as their reads overlap, the writer never gets the lock."),
))

# --- Redis, correct while the lease outlives the work ------------------------------

REDIS = register(Strategy(
    name="redis", family="redis",
    summary=N_("SET key token NX PX lease; Lua compare-and-delete; INCR fencing token."),
    correct_across_instances=True, factory="locks.redis_lock:RedisLockFactory",
    requires=("redis",),
    failure_mode=N_("A holder paused past its lease overlaps the next holder; fencing "
                    "rejects its late write."),
))

REDIS_REENTRANT = register(Strategy(
    name="redis_reentrant", family="redis",
    summary=N_("A hash of owner (thread) to count, in Lua: acquire again, release down to zero."),
    correct_across_instances=True, factory="locks.redis_reentrant:ReentrantRedisFactory",
    requires=("redis",),
    failure_mode=N_("As redis: a holder paused past its lease; fencing rejects its write."),
))

REDIS_WATCHDOG = register(Strategy(
    name="redis_watchdog", family="redis",
    summary=N_("SET NX PX with a watchdog renewing the lease every third of it while held."),
    correct_across_instances=True, factory="locks.redis_watchdog:WatchdogRedisFactory",
    requires=("redis",),
    failure_mode=N_("A failed renewal loses the lock: the holder gets LockLost before it "
                    "commits. A paused process pauses its watchdog too; fencing covers that."),
))

REDISSON = register(Strategy(
    name="redisson", family="redis",
    summary=N_("Redisson's lock: the reentrant hash in Lua, and a watchdog renewing its lease."),
    correct_across_instances=True, factory="locks.redisson:RedissonFactory",
    requires=("redis",),
    failure_mode=N_("A whole process paused past its lease pauses its watchdog too; fencing "
                    "rejects its write."),
))

REDIS_FAIR = register(Strategy(
    name="redis_fair", family="redis",
    summary=N_("Waiters queue and sleep on BLPOP until a release wakes the head one; a head "
            "that has waited past a threshold is handed the lock (Go's mutex starvation "
            "mode)."),
    correct_across_instances=True, factory="locks.redis_fair:FairRedisFactory",
    requires=("redis",),
    failure_mode=N_("As redis: a holder paused past its lease; fencing rejects its write."),
))

REDIS_TWO_MODE = register(Strategy(
    name="redis_two_mode", family="redis",
    summary=N_("Two modes, as Go's mutex: a free lock goes to whoever asks first until the "
            "head of the queue has waited past a threshold; then a release hands it to the "
            "head."),
    correct_across_instances=True, factory="locks.redis_two_mode:TwoModeRedisFactory",
    requires=("redis",),
    failure_mode=N_("As redis: a holder paused past its lease; fencing rejects its write."),
))

REDLOCK = register(Strategy(
    name="redlock", family="redis",
    summary=N_("Redlock over N independent Redis servers: a majority, within the validity "
            "time less clock drift."),
    correct_across_instances=True, factory="locks.redlock:RedlockFactory",
    requires=("redis",),
    failure_mode=N_("No fencing token; a pause longer than the validity time leaves two "
                    "holders (the shop checks validity before commit). Fewer than a majority "
                    "of servers up: 503."),
))

# --- ZooKeeper: ephemeral nodes that go with the session that made them -------------

ZK_SIMPLE = register(Strategy(
    name="zk_simple", family="zookeeper",
    summary=N_("One ephemeral node; waiters watch it and race again when it goes (herd effect)."),
    correct_across_instances=True, factory="locks.zk_simple:ZkSimpleFactory",
    requires=("zookeeper",),
    failure_mode=N_("Correct, but every release wakes every waiter (see herd wake-ups). "
                    "A lost session loses the lock: LockLost before commit, and fencing."),
))

ZK_FAIR = register(Strategy(
    name="zk_fair", family="zookeeper",
    summary=N_("Ephemeral sequential nodes: the lowest holds, each waiter watches its "
            "predecessor only; first come, first served; re-entrant."),
    correct_across_instances=True, factory="locks.zk_fair:ZkFairFactory",
    requires=("zookeeper",),
    failure_mode=N_("A lost session loses the lock: LockLost before commit, and fencing "
                    "by the node's creation zxid."),
))

ZK_RW = register(Strategy(
    name="zk_rw", family="zookeeper",
    summary=N_("Read/write lock of sequential nodes: sales take the write lock, stocktakes "
            "the read lock, so stocktakes share it and never see half a sale."),
    correct_across_instances=True, factory="locks.zk_rw:ZkReadWriteFactory",
    requires=("zookeeper",),
    failure_mode=N_("As zk_fair."),
))

# --- ZooKeeper, one step of the recipe left out -----------------------------------

ZK_FAIR_TRUSTING = register(Strategy(
    name="zk_fair_trusting", family="zookeeper-broken",
    summary=N_("The fair lock, but a waiter takes any deletion ahead of it as 'the lock is mine'."),
    correct_across_instances=False, factory="locks.zk_broken:TrustingQueueFactory",
    requires=("zookeeper",),
    failure_mode=N_("When the waiter ahead gives up (a timeout), the one behind it walks in "
                    "while the holder still holds: two holders."),
))
