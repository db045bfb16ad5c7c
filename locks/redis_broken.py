"""Redis locks that are broken on purpose: the seeds' first attempts.

Each one fails in its own way, every time, when the conditions below are
set up (a kill, a fault hook, a lease shorter than the work). They are here
to be read next to ``RedisLock``, which fixes all four.
"""

from __future__ import annotations

import os
import time

from .redis_support import RedisFactory, RedisLockBase

#: Fault hooks (``LOCKSHOP_FAULTS``), for making the failures happen on demand.
CRASH_AFTER_SETNX = "crash_after_setnx"
PAUSE_BEFORE_DEL = "pause_before_del"


class NaiveRedisLock(RedisLockBase):
    """The seeds' code never asks Redis whether it still holds the lock, and
    neither do these: otherwise the shop's check before commit would quietly
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


class SetnxNoExpiryFactory(RedisFactory):
    lock_class = SetnxNoExpiryLock


class SetnxThenExpireFactory(RedisFactory):
    lock_class = SetnxThenExpireLock


class PlainDelFactory(RedisFactory):
    lock_class = PlainDelLock


class GetThenDelFactory(RedisFactory):
    lock_class = GetThenDelLock
