"""Labs of re-entry on Redis (A0): a holder that asks again for its own lock.

The articles' reentrant lock, a hash of owner to count, and the three ways
its drafts go wrong: an inner release that deletes the whole key, an acquire
written as separate commands, and (beyond the articles) an owner named by
thread id, which Python gives to the next thread.
"""

from __future__ import annotations

import threading
import time

from lockshop.cluster.thread_ids import in_a_thread
from lockshop.workshop.staging import steps
from lockshop.workshop.staging.record import Lab
from lockshop.workshop.labs.redis_leases import KEY, server_client
from shop.i18n import N_, _, join, yes_no

# --- C13: asking again for a lock you hold ---------------------------------------------

def stage_reentrant(run) -> None:
    """The holder of product:1 calls code that takes the same lock again."""
    versions = (("redis", _("SET NX PX: one token per acquire, not per owner")),
                ("redis_reentrant", _("a hash of owner -> count, changed only in Lua")))
    for half, (strategy, how) in zip(("broken", "fix"), versions, strict=True):
        getattr(run, half)(strategy, how)
        server, = run.parts.redis()
        factory = run.open_locks(strategy, redis_url=server.url, lease_ms=5000)
        outer = factory.lock("product:1")
        outer.acquire()
        inner = factory.lock("product:1", timeout=0.3)
        again, waited = steps.timed_acquire(inner)
        if half == "broken":
            run.check(_("the holder asks for product:1 again (an inner call, timeout 0.3 s)"),
                      expected=_("it waits for itself, and gives up when the timeout ends"),
                      observed=steps.asked(again, waited),
                      agrees=not again and waited >= 0.3)
            outer.release()
            continue
        run.check(_("the holder asks for product:1 again (an inner call, timeout 0.3 s)"),
                  expected=_("granted at once: the same owner, the count goes to 2"),
                  observed=_("acquired: %(got)s after %(seconds)s s; count %(count)s",
                             got=yes_no(again), seconds=f"{waited:.2f}",
                             count=_owner_count(server, outer)),
                  agrees=again and waited < 0.3 and _owner_count(server, outer) == 2)
        inner.release()
        run.check(_("the inner call releases"),
                  expected=_("the count goes to 1; the lock stays"),
                  observed=_("count %(count)s", count=_owner_count(server, outer)),
                  agrees=_owner_count(server, outer) == 1)
        outer.release()
        run.check(_("the outer call releases"),
                  expected=_("the count reaches 0: the key is deleted"),
                  observed=_("key exists: %(exists)s",
                             exists=yes_no(bool(server_client(server).exists(KEY)))),
                  agrees=not server_client(server).exists(KEY))


def _owner_count(server, lock) -> int:
    return int(server_client(server).hget(KEY, lock.holder) or 0)


# --- C27, C28: re-entry done wrong --------------------------------------------------------------

def _another_owner_tries(factory) -> bool:
    """Another thread (another owner) asks for product:1 without waiting; did it get in?"""
    got_in: list[bool] = []
    thread = threading.Thread(target=lambda: got_in.append(
        factory.lock("product:1").acquire(blocking=False)))
    thread.start()
    thread.join()
    return got_in[0]


def stage_inner_release(run) -> None:
    """The holder re-enters, and its inner call releases before the outer one is done."""
    server, = run.parts.redis()
    for half, strategy, how in (
            ("broken", "redis_reentrant_del", _("re-entry counted in a hash, but released by "
                                                "DEL")),
            ("fix", "redis_reentrant", _("the release counts down, and deletes at zero"))):
        getattr(run, half)(strategy, how)
        factory = run.open_locks(strategy, redis_url=server.url, lease_ms=5000)
        outer, inner = factory.lock("product:1"), factory.lock("product:1")
        outer.acquire()
        inner.acquire()
        inner.release()
        other_got_in = _another_owner_tries(factory)
        if half == "broken":
            run.check(_("the holder re-enters, its inner call releases; another owner asks"),
                      expected=_("the key is gone: the other owner gets in while the outer "
                                 "section still works"),
                      observed=_("other owner got in: %(got_in)s", got_in=yes_no(other_got_in)),
                      agrees=other_got_in)
        else:
            run.check(_("the holder re-enters, its inner call releases; another owner asks"),
                      expected=_("refused: the outer hold still counts 1"),
                      observed=_("other owner got in: %(got_in)s", got_in=yes_no(other_got_in)),
                      agrees=not other_got_in)
        outer.release()
        server_client(server).delete(KEY)


def stage_acquire_in_steps(run) -> None:
    """Two owners ask at the same moment; one is paused between EXISTS and HSET."""
    server, = run.parts.redis()
    for half, strategy, how in (
            ("broken", "redis_reentrant_steps", _("EXISTS, then HSET, then PEXPIRE: separate "
                                                  "commands (fault hook: a pause after "
                                                  "EXISTS)")),
            ("fix", "redis_reentrant", _("the same steps in one Lua script"))):
        getattr(run, half)(strategy, how)
        paused = run.open_locks(strategy, redis_url=server.url, lease_ms=2000,
                                faults=("pause_after_exists",))
        other = run.open_locks(strategy, redis_url=server.url, lease_ms=2000)
        a, b = paused.lock("product:1"), other.lock("product:1")
        a_holds: list[bool] = []
        asking = threading.Thread(target=lambda: a_holds.append(a.acquire(blocking=False)))
        asking.start()
        time.sleep(0.2)  # A has seen EXISTS say 0, and is in its pause (1 s)
        b_holds = b.acquire(blocking=False)
        asking.join()
        owners = server_client(server).hlen(KEY)
        observed = _("A holds: %(a)s, B holds: %(b)s; owners in the hash: %(owners)s",
                     a=yes_no(a_holds[0]), b=yes_no(b_holds), owners=owners)
        if half == "broken":
            run.check(_("A and B ask for product:1; A pauses between EXISTS and HSET"),
                      expected=_("both saw no key, both wrote their name: two holders"),
                      observed=observed, agrees=a_holds[0] and b_holds and owners == 2)
        else:
            run.check(_("A and B ask for product:1 at the same moment"),
                      expected=_("one script at a time: one holder, the other refused"),
                      observed=observed, agrees=a_holds[0] != b_holds and owners == 1)
        server_client(server).delete(KEY)


# --- C49: an owner named by its thread id ---------------------------------------------------

def stage_recycled_owner(run) -> None:
    """A worker thread dies holding product:1; the next thread gets its id and asks."""
    server, = run.parts.redis()
    for half, strategy, how in (
            ("broken", "redis_reentrant_thread_id", _("the owner is host:pid:thread id, as "
                                                      "Redisson's UUID:threadId in Java")),
            ("fix", "redis_reentrant", _("the owner is a name made for each thread when it "
                                         "first asks, with a random part"))):
        getattr(run, half)(strategy, how)
        factory = run.open_locks(strategy, redis_url=server.url, lease_ms=5000)

        def ask() -> bool:
            return factory.lock("product:1").acquire(blocking=False)

        a_holds, dead_id = in_a_thread(ask)
        run.check(_("worker A takes product:1, then ends without releasing (an exception on a "
                    "path that skips the release)"),
                  expected=_("A's lock stays until its lease runs out"),
                  observed=_("A acquired: %(acquired)s; owners in the hash: %(owners)s",
                             acquired=yes_no(a_holds), owners=server_client(server).hlen(KEY)),
                  agrees=a_holds and server_client(server).hlen(KEY) == 1)
        b_got_in, _b_id = in_a_thread(ask, wanted_id=dead_id)
        owners = server_client(server).hgetall(KEY)
        observed = _("B has A's thread id; B got in: %(got_in)s; count in the hash: %(count)s",
                     got_in=yes_no(b_got_in), count=join(v.decode() for v in owners.values()))
        if half == "broken":
            run.check(_("worker B, given A's thread id by Python, asks without waiting"),
                      expected=_("B is taken for A and re-enters: A's section and B's at once"),
                      observed=observed, agrees=b_got_in)
        else:
            run.check(_("worker B, given A's thread id by Python, asks without waiting"),
                      expected=_("refused: B is another owner, whatever its thread id"),
                      observed=observed, agrees=not b_got_in)
        server_client(server).delete(KEY)


LABS = (
    Lab("C13", "redis_reentrant", N_("A non-reentrant lock deadlocks on its holder; a hash of "
        "owner to count fixes it"), ("A0",), ("redis",), 1, stage_reentrant),
    Lab("C27", "redis_reentrant_del", N_("A reentrant lock whose inner release deletes the key "
        "leaves the outer section unprotected; count down instead"), ("A0",), ("redis",), 1,
        stage_inner_release),
    Lab("C28", "redis_reentrant_steps", N_("A reentrant acquire in separate commands lets two "
        "owners in; one Lua script does not"), ("A0",), ("redis",), 2, stage_acquire_in_steps),
    Lab("C49", "redis_owner_thread_id", N_("An owner named by thread id lets the next thread "
        "into a dead thread's lock (Python reuses thread ids); an owner made per thread does "
        "not"), (), ("redis",), 1, stage_recycled_owner),
)
