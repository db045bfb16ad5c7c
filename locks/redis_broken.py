"""Redis locks that are broken on purpose: the articles' first attempts.

Each one fails in its own way, every time, when the conditions below are
set up (a kill, a fault hook, a lease shorter than the work). They are here
to be read next to the locks that fix them: ``RedisLock`` fixes the first
four, ``ReentrantRedisLock`` the three reentrant ones, ``zk_rw`` the read/write one.
"""

from __future__ import annotations

import os
import socket
import threading
import time

from .owner import current_owner
from .redis_reentrant import ReentrantRedisLock
from .redis_support import RedisFactory, RedisLockBase

#: Fault hooks (``LOCKSHOP_FAULTS``), for making the failures happen on demand.
CRASH_AFTER_SETNX = "crash_after_setnx"
PAUSE_BEFORE_DEL = "pause_before_del"
PAUSE_AFTER_EXISTS = "pause_after_exists"
READERS_PREFIX = "lockshop:readers:"


class NaiveRedisLock(RedisLockBase):
    """The articles' first attempts never ask Redis whether they still hold the
    lock, and neither do these: otherwise the shop's check before commit would quietly
    rescue them and hide the failure they are here to show."""

    def _still_held(self) -> bool:
        return True


class SetnxNoExpiryLock(NaiveRedisLock):
    """``SETNX key token``, released by ``DEL``: no expiry at all.

    Fails when the holder dies inside its critical section (a crash, a
    SIGKILL, a deploy): nobody deletes the key, and every later order for
    that product waits and gets 503, forever, until an admin deletes the key.
    """

    def _try_acquire(self) -> bool:
        return bool(self.client.setnx(self.key, self.token))

    def _release(self) -> None:
        self.client.delete(self.key)


class SetnxThenExpireLock(NaiveRedisLock):
    """``SETNX`` then ``EXPIRE``: an expiry, but set by a second command.

    Fails when the holder crashes between the two commands: the key exists
    with no expiry, and the lock is stuck as in ``SetnxNoExpiryLock``. The
    fault hook ``crash_after_setnx`` makes the process die exactly there.
    """

    def _try_acquire(self) -> bool:
        if not self.client.setnx(self.key, self.token):
            return False
        if CRASH_AFTER_SETNX in self.faults:
            os._exit(70)  # the crash between the two commands, on demand
        self.client.pexpire(self.key, self.lease_ms)
        return True

    def _release(self) -> None:
        self.client.delete(self.key)


class PlainDelLock(NaiveRedisLock):
    """``SET NX PX`` (atomic, with expiry), but released by a plain ``DEL``.

    Fails when a holder is slower than the lease: its key expires, a second
    buyer takes the lock, and the first one's ``DEL`` then deletes the
    *second one's* lock, letting a third in. Two holders at once, and the
    read-check-write between them oversells.
    """

    def _try_acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=self.lease_ms))

    def _release(self) -> None:
        self.client.delete(self.key)


class GetThenDelLock(NaiveRedisLock):
    """``SET NX PX``, released by ``GET``, compare, then ``DEL``: two commands.

    Checks the owner, but not atomically: if the lease expires between the
    ``GET`` and the ``DEL`` and someone else acquires in that window, the
    ``DEL`` deletes their lock. The window is narrow; the fault hook
    ``pause_before_del`` holds it open for one lease.
    """

    def _try_acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=self.lease_ms))

    def _release(self) -> None:
        if self.client.get(self.key) != self.token.encode():
            return  # not ours any more: nothing to do (so far, so right)
        if PAUSE_BEFORE_DEL in self.faults:
            time.sleep(self.lease_ms * 1.5 / 1000)  # the expiry happens right here
        self.client.delete(self.key)


class ReentrantDeleteLock(ReentrantRedisLock):
    """A hash of owner -> count to acquire, as it should be, but released by ``DEL``.

    Fails when a holder re-enters: the *inner* release deletes the whole key,
    and the outer section goes on with no lock at all; anyone may take it
    (article A0: "if the innermost release deletes the lock, the outer
    business runs unlocked"). The fix counts down and deletes at zero.
    """

    def _release(self) -> None:
        self.client.delete(self.key)

    def _still_held(self) -> bool:
        return True  # as the other naive locks: never ask


class ReentrantInStepsLock(NaiveRedisLock):
    """The reentrant acquire written as the article's separate commands:
    ``EXISTS``; ``HEXISTS``; ``HSET`` (or ``HINCRBY``); ``PEXPIRE``.

    Fails when two owners both see ``EXISTS`` say 0 before either writes:
    both ``HSET`` their name, and both hold the lock. The fault hook
    ``pause_after_exists`` holds that window open for half a lease. One Lua
    script (``ReentrantRedisLock``) has no window.
    """

    reentrant = True

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.holder = ""

    def _try_acquire(self) -> bool:
        if not self.held:
            self.holder = current_owner()
        if not self.client.exists(self.key):
            if PAUSE_AFTER_EXISTS in self.faults:
                time.sleep(self.lease_ms * 0.5 / 1000)  # the window, on demand
            self.client.hset(self.key, self.holder, 1)
            self.client.pexpire(self.key, self.lease_ms)
            return True
        if self.client.hexists(self.key, self.holder):
            self.client.hincrby(self.key, self.holder, 1)
            self.client.pexpire(self.key, self.lease_ms)
            return True
        return False

    def _release(self) -> None:
        if self.client.hincrby(self.key, self.holder, -1) <= 0:
            self.client.delete(self.key)


def thread_id_owner() -> str:
    """Java's habit (Redisson's ``UUID:threadId``): the owner is the thread's id."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


class ThreadIdOwnerLock(ReentrantRedisLock):
    """The reentrant hash, right in every step, with its owner named by thread id.

    Fails when a thread ends while it holds the lock (an exception on a path
    that skips the release, a worker that is stopped): Python gives that
    thread's id to the next thread it starts, which then *re-enters* the dead
    thread's lock as if it were its own. Two sections run at once, and the
    audit is the first to notice. Java never reuses a thread id; Python does,
    so ``locks.owner`` adds a random part made per thread.
    """

    asking_owner = staticmethod(thread_id_owner)


class ReadersFirstWriteLock(NaiveRedisLock):
    """The write half of a read/write lock that prefers readers: a writer may take
    ``lockshop:lock:<name>`` only while no reader holds ``lockshop:readers:<name>``.

    Fails the writer: readers that arrive while it waits go straight in, so as
    long as their reads overlap, the reader count never falls to zero and the
    writer waits on (article A3: a writer must not be starved). ``zk_rw``
    queues readers that arrive after a waiting writer behind it.
    """

    ACQUIRE = """
    local writer = KEYS[1]    -- the write key
    local readers = KEYS[2]   -- how many readers hold the lock
    local token = ARGV[1]
    local lease_ms = ARGV[2]
    if tonumber(redis.call("GET", readers) or "0") > 0 then return 0 end
    if redis.call("SET", writer, token, "NX", "PX", lease_ms) then return 1 end
    return 0
    """

    def __init__(self, name: str, **options) -> None:
        super().__init__(name, **options)
        self.readers = READERS_PREFIX + name

    def _try_acquire(self) -> bool:
        return bool(self.run(self.ACQUIRE, keys=[self.key, self.readers],
                             args=[self.token, self.lease_ms]))

    def _release(self) -> None:
        self.client.delete(self.key)


class ReadersFirstReadLock(ReadersFirstWriteLock):
    """The read half: in whenever no writer *holds* the lock; waiting writers do not count."""

    ACQUIRE = """
    local writer = KEYS[1]    -- the write key
    local readers = KEYS[2]   -- how many readers hold the lock
    local lease_ms = ARGV[1]
    if redis.call("EXISTS", writer) == 1 then return 0 end
    redis.call("INCR", readers)
    redis.call("PEXPIRE", readers, lease_ms)
    return 1
    """

    def _try_acquire(self) -> bool:
        return bool(self.run(self.ACQUIRE, keys=[self.key, self.readers], args=[self.lease_ms]))

    def _release(self) -> None:
        self.client.decr(self.readers)


class SetnxNoExpiryFactory(RedisFactory):
    lock_class = SetnxNoExpiryLock


class SetnxThenExpireFactory(RedisFactory):
    lock_class = SetnxThenExpireLock


class PlainDelFactory(RedisFactory):
    lock_class = PlainDelLock


class GetThenDelFactory(RedisFactory):
    lock_class = GetThenDelLock


class ReentrantDeleteFactory(RedisFactory):
    lock_class = ReentrantDeleteLock


class ReentrantInStepsFactory(RedisFactory):
    lock_class = ReentrantInStepsLock


class ThreadIdOwnerFactory(RedisFactory):
    lock_class = ThreadIdOwnerLock


class ReadersFirstFactory(RedisFactory):
    lock_class = ReadersFirstWriteLock
    shared_reads = True

    def read_lock(self, name: str, *, timeout: float = 5.0,
                  label: str | None = None) -> ReadersFirstReadLock:
        return ReadersFirstReadLock(name, strategy=label or self.strategy.name, timeout=timeout,
                                    **self.lock_arguments())
