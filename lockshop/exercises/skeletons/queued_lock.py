"""Exercise 10: a queued Redis lock, whose waiters sleep until a release wakes them.

Articles A1 and A4: a lock that polls (SET NX, sleep, SET NX again...) keeps
sending commands while it waits, and it is unfair: whoever happens to ask just
after a release gets in, and an unlucky waiter can lose that race again and
again (lesson C34). Queue instead: a waiter that is refused puts its token at
the end of a list and sleeps on a list of its own with BLPOP, which blocks in
the server until something is pushed there. A release deletes the key and
pushes a wake-up to the waiter at the head of the queue; a free lock belongs to
that head, so the waiters get it in the order they came. A waiter that gives
up must leave the queue, or the lock waits for someone who is gone (C38).

Check it:   ./run exercise check 10 queued_lock.py
(it runs exercise 3's token checks too: C11, C12)

What you may use (the base class, RedisLockBase, and __init__ below set them up):
    self.client     a redis-py client of the grader's Redis
    self.key        this lock's key, "lockshop:lock:<name>"
    self.token      a value no other acquisition uses (new for every lock object)
    self.lease_ms   how long a lease lasts, in milliseconds
    self.queue      the queue's key: a list of the waiters' tokens, in arrival order
    self.wake       this lock's own wake list: BLPOP on it; a release RPUSHes to
                    WAKE_PREFIX + the head's token
    self.run(script, keys, args)   run a Lua script on the server, in one step
The base class calls _try_acquire(), then _wait_for_release(seconds) between
attempts, and _gave_up() when acquire's timeout has run out.
LockLost (from locks import LockLost) is how a release says "it was no longer mine".
"""

from locks import LockLost  # noqa: F401 - for TODO 2
from locks.redis_support import QUEUE_PREFIX, WAKE_PREFIX, RedisLockBase


class QueuedLock(RedisLockBase):

    #: The longest a waiter sleeps without being told: a fallback, never a poll.
    fallback_seconds = 0.5

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.queue = QUEUE_PREFIX + name
        self.wake = WAKE_PREFIX + self.token

    # TODO 1: a Lua script, keys (self.key, self.queue), args (self.token, self.lease_ms):
    # if the lock's key does not exist and the queue is empty or headed by our token
    # (LINDEX queue 0), SET the key to our token with PX lease_ms, LREM our token from
    # the queue, and return 1; otherwise RPUSH our token on the queue unless it is
    # there already (LPOS), and return 0.
    ACQUIRE = None

    # TODO 2: a Lua script, keys (self.key, self.queue), args (self.token, WAKE_PREFIX):
    # return 0 unless the key holds our token; else DEL it, and if the queue has a head,
    # RPUSH a wake-up (any value) to WAKE_PREFIX .. head, with a PEXPIRE so that it does
    # not stay forever; return 1.
    RELEASE = None

    def _try_acquire(self) -> bool:
        """One attempt: True if the lock is now ours; else we are in the queue."""
        raise NotImplementedError("TODO 1: write ACQUIRE and run it with self.run")

    def _wait_for_release(self, seconds: float) -> None:
        """Sleep until a release wakes us, or at most ``seconds``."""
        # TODO 3: BLPOP self.wake, with a timeout of at most self.fallback_seconds.
        raise NotImplementedError("TODO 3: wait with BLPOP on self.wake")

    def _gave_up(self) -> None:
        """acquire's timeout ran out: leave the queue."""
        # TODO 4: take our token out of the queue (LREM) and delete our wake list.
        raise NotImplementedError("TODO 4: leave the queue")

    def _release(self) -> None:
        """Give the lock back, only if it is still ours; else raise LockLost."""
        raise NotImplementedError("TODO 2: write RELEASE and run it with self.run; when it "
                                  "returns 0, raise LockLost")
