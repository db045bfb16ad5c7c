"""Exercise 11: Redlock over five Redis servers of the grader's own (C16, C33, C17).

The grader kills, stops and pauses its own servers (SIGKILL, SIGTERM, SIGSTOP)
and looks at each server's key with a plain client of its own; what it
judges is what the student's lock answers (acquire, ensure_held) and what it
leaves on the servers, never its code. Out of process, the student's lock reaches
each server through a proxy of the grader's (``Grading.students_url``), which
outlives the server's kills and restarts, and behind a paused server takes the
command and never answers, as the server itself would.

C17, the server that restarts without persistence and forgets the key, is a
weakness no lock code removes: with the server back at once, a second client
gets a majority while the first still holds (the workshop's lab shows it).
What the student can practise is the remedy's half that lives in the lock: a
holder whose validity is the lease less the time spent (so that it knows when
its lock may be gone), a majority of all five (never of those that answered),
and the operator's half that the Redlock write-up asks for, staged here by
the grader: the crashed server stays out for one lease before it restarts.
"""

from __future__ import annotations

import time

import redis

from locks import BackendUnavailable, LockLost
from lockshop.exercises.grading import Check, Grading
from shop.i18n import _, lazy_gettext, yes_no

DOWN_TWO, DOWN_THREE = (0, 3), (0, 1, 3)
#: A per-server timeout must be far shorter than the lease: two paused servers may cost
#: at most this share of it.
SHARE_OF_LEASE = 0.25


def _outcome(lock) -> str:
    """What an attempt of ``lock`` (blocking=False) came to: acquired, refused, or
    unavailable (``BackendUnavailable``: too few servers answered)."""
    try:
        return "acquired" if lock.acquire(blocking=False) else "refused"
    except BackendUnavailable:
        return "unavailable"


def _said(outcome: str) -> str:
    return {"acquired": _("acquired"), "refused": _("refused"),
            "unavailable": _("refused: backend unavailable")}[outcome]


def _attempt(grading: Grading, factory, name: str):
    """A lock of ``factory`` on ``name``, tried once in a thread of its own (an owner of
    its own): (the lock, its outcome)."""
    def attempt():
        lock = factory.lock(name, timeout=0)
        return lock, _outcome(lock)
    return grading.in_thread(attempt)


class _Servers:
    """The grader's five servers, and a plain client of each to look at keys."""

    def __init__(self, grading: Grading) -> None:
        self.servers = grading.redis_servers
        self.clients = [redis.Redis.from_url(s.url, socket_timeout=1, socket_connect_timeout=1)
                        for s in self.servers]

    def holding(self, key: str, token: bytes | None, where=None) -> int:
        """How many of the servers (``where``: their indexes) hold ``token`` in ``key``
        (None: any value)."""
        found = 0
        for index in where if where is not None else range(len(self.servers)):
            try:
                value = self.clients[index].get(key)
            except redis.RedisError:
                continue
            found += value is not None and (token is None or value == token)
        return found

    def close(self) -> None:
        for client in self.clients:
            client.close()


def _token(lock) -> bytes:
    return str(lock.token).encode()


def _numbers(indexes) -> str:
    return ", ".join(str(index + 1) for index in indexes)


# --- C16: a majority of five --------------------------------------------------------------------

def two_down(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("two-down")
    a_factory, b_factory = grading.factory(), grading.factory()
    try:
        for index in DOWN_TWO:
            grading.redis_servers[index].kill()
        a, a_said = _attempt(grading, a_factory, name)
        _b, b_said = _attempt(grading, b_factory, name)
        if a_said == "acquired":
            grading.in_thread(grading.release_quietly, a)
    finally:
        for index in DOWN_TWO:
            grading.start_server(grading.redis_servers[index])
    return _("servers %(down)s killed; A: %(a)s; B: %(b)s", down=_numbers(DOWN_TWO),
             a=_said(a_said), b=_said(b_said)), a_said == "acquired" and b_said != "acquired"


def three_down(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("three-down")
    factory = grading.factory()
    look = _Servers(grading)
    try:
        for index in DOWN_THREE:
            grading.redis_servers[index].kill()
        a, a_said = _attempt(grading, factory, name)
        up = [i for i in range(len(grading.redis_servers)) if i not in DOWN_THREE]
        left = look.holding(grading.key_of(name), _token(a), up)
        if a_said == "acquired":
            grading.in_thread(grading.release_quietly, a)
    finally:
        for index in DOWN_THREE:
            grading.start_server(grading.redis_servers[index])
        look.close()
    # What it leaves behind is said, and judged by C33's own check.
    return _("servers %(down)s killed; A: %(a)s; A's token left on the two up: %(left)s",
             down=_numbers(DOWN_THREE), a=_said(a_said), left=left), a_said != "acquired"


# --- C33: validity, the per-server timeout, and the clean-up of a failed attempt -----------------

def validity(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("validity")
    key = grading.key_of(name)
    lease_ms = grading.lease_ms
    factory = grading.factory()
    look = _Servers(grading)
    # The last two are paused, not the first two: the lock then sets its key on the
    # three others before it waits out the paused ones' timeouts (connecting to a paused
    # server waits too, for its handshake). A lock that counts its validity from the
    # answers' end then trusts itself those two timeouts after the keys expire, a margin
    # the grader sees; paused first, the keys would be set as late as the last answer.
    paused = (3, 4)
    up = [i for i in range(len(grading.redis_servers)) if i not in paused]
    quorum = len(grading.redis_servers) // 2 + 1
    try:
        for index in paused:
            grading.redis_servers[index].pause()

        def hold() -> tuple[str, float, float | None, float | None]:
            lock = factory.lock(name, timeout=0)
            started = time.monotonic()
            said = _outcome(lock)
            took = time.monotonic() - started
            if said != "acquired":
                return said, took, None, None
            token = _token(lock)
            trusted_after_expiry = None
            deadline = started + lease_ms / 1000 + 1.0
            while time.monotonic() < deadline:
                # Keys first, then the lock's word: a lock that trusts itself after the
                # servers let the key go is caught, whatever the timing between the two.
                present = look.holding(key, token, up)
                try:
                    lock.ensure_held()
                except LockLost:
                    return said, took, time.monotonic() - started, trusted_after_expiry
                if present < quorum and trusted_after_expiry is None:
                    trusted_after_expiry = time.monotonic() - started
                time.sleep(0.005)
            return said, took, None, trusted_after_expiry

        said, took, lost_after, trusted_after_expiry = grading.in_thread(hold)
    finally:
        for index in paused:
            grading.redis_servers[index].resume()
        look.close()
    took_ms = took * 1000
    bound_ms = lease_ms * SHARE_OF_LEASE
    if said != "acquired":
        return _("servers %(paused)s paused; A: %(a)s after %(took)s ms (the lease: %(lease)s "
                 "ms)", paused=_numbers(paused), a=_said(said), took=f"{took_ms:.0f}",
                 lease=lease_ms), False
    if lost_after is None:
        lost = _("it still said held %(ms)s ms after it asked", ms=lease_ms + 1000)
    else:
        lost = _("it said lost %(ms)s ms after it asked", ms=f"{lost_after * 1000:.0f}")
    if trusted_after_expiry is not None:
        lost += _(" (the keys had expired on the servers %(ms)s ms after it asked)",
                  ms=f"{trusted_after_expiry * 1000:.0f}")
    observed = _("servers %(paused)s paused; A acquired in %(took)s ms (the lease: %(lease)s "
                 "ms); %(lost)s", paused=_numbers(paused), took=f"{took_ms:.0f}",
                 lease=lease_ms, lost=lost)
    return observed, (took_ms <= bound_ms and lost_after is not None
                      and trusted_after_expiry is None and lost_after >= lease_ms / 2000)


def failed_attempt_unlocks(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("unlocks")
    key = grading.key_of(name)
    look = _Servers(grading)
    factory = grading.factory()
    others = (0, 1, 2)
    try:
        for index in others:
            look.clients[index].set(key, "B's token", px=10_000)
        a, a_said = _attempt(grading, factory, name)
        rest = [i for i in range(len(grading.redis_servers)) if i not in others]
        left = look.holding(key, _token(a), rest)
        if a_said == "acquired":
            grading.in_thread(grading.release_quietly, a)
    finally:
        look.close()
    return _("B holds servers %(others)s; A: %(a)s; A's token left on servers %(rest)s: "
             "%(left)s", others=_numbers(others), a=_said(a_said), rest=_numbers(rest),
             left=left), a_said == "refused" and left == 0


# --- C17: the server that forgets -----------------------------------------------------------------

def forgetful_server(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("forgets")
    servers = grading.redis_servers
    lease = grading.lease_ms / 1000
    a_factory = grading.factory()
    cut_off, forgets = (3, 4), 2
    try:
        for index in cut_off:
            servers[index].stop()
        a, a_said = _attempt(grading, a_factory, name)
        asked = time.monotonic()
        for index in cut_off:
            grading.start_server(servers[index])  # back, empty
        if a_said != "acquired":
            return _("servers %(off)s stopped; A: %(a)s", off=_numbers(cut_off),
                     a=_said(a_said)), False
        servers[forgets].kill()  # a crash: it will come back with nothing
        # B's clients are made now, so that none of its connections is to a server that
        # has gone since: B is refused for what the servers answer, not for a stale socket.
        b_factory = grading.factory()
        _b, b_early = _attempt(grading, b_factory, name)
        a_early = _still_held(grading, a)
        # The crashed server stays out until the longest lease has run out.
        time.sleep(max(0.0, asked + lease + 0.05 - time.monotonic()))
        a_late = _still_held(grading, a)
        grading.start_server(servers[forgets])
        b, b_late = _attempt(grading, b_factory, name)
        if b_late == "acquired":
            grading.in_thread(grading.release_quietly, b)
    finally:
        for index in (*cut_off, forgets):
            if servers[index].process is None:
                grading.start_server(servers[index])
    observed = _("A held servers 1-3; server 3 crashed and stayed out one lease. Before: B "
                 "%(b_early)s, A's lock said held: %(a_early)s; after, server 3 back empty: B "
                 "%(b_late)s, A's lock said held: %(a_late)s",
                 b_early=_said(b_early), a_early=yes_no(a_early), b_late=_said(b_late),
                 a_late=yes_no(a_late))
    # A's lock may say lost early (a lock that reads the servers sees server 3 gone): that
    # is safe. Saying held once B holds is not.
    return observed, b_early != "acquired" and b_late == "acquired" and not a_late


def _still_held(grading: Grading, lock) -> bool:
    def ask() -> bool:
        try:
            lock.ensure_held()
        except LockLost:
            return False
        return True
    return grading.in_thread(ask)


MAJORITY = (
    Check("C16", lazy_gettext("servers %(down)s of 5 are killed; A asks for the lock, then B",
                              down=_numbers(DOWN_TWO)),
          lazy_gettext("A holds it (3 of 5 said yes), B is refused"),
          lazy_gettext("Count the servers that said yes to SET key token NX PX lease (fan_out "
                       "gives UNREACHABLE for a dead one): the lock is yours with self.quorum "
                       "(3 of 5) or more, whatever the other two did."), two_down),
    Check("C16", lazy_gettext("servers %(down)s of 5 are killed; A asks for the lock",
                              down=_numbers(DOWN_THREE)),
          lazy_gettext("refused: 2 of 5 is no majority"),
          lazy_gettext("Two yeses of five are no majority: the quorum is of all the servers "
                       "(self.quorum, 3 of 5), never of those that answered. Refuse (return "
                       "False, or raise BackendUnavailable when fewer than self.quorum "
                       "answered at all)."), three_down),
)
VALIDITY = (
    Check("C33", lazy_gettext("servers 4 and 5 are paused (SIGSTOP: they take the command and "
                              "never answer); A asks, then the grader watches A's "
                              "ensure_held() and the keys on the three others"),
          lazy_gettext("A gets the lock within a quarter of the lease (each paused server "
                       "costs only a short timeout), and its lock says lost before the keys "
                       "expire on the servers: validity = lease - time spent - drift"),
          lazy_gettext("Set server_timeout far below the lease (0.1 s for a 2 s lease): one "
                       "slow server must not eat the lease. Note the clock before the fan-out; "
                       "validity = lease_ms - elapsed - drift (a hundredth of the lease + 2 ms); keep "
                       "started + validity, and let _still_held() say False after it."),
          validity),
    Check("C33", lazy_gettext("B holds the lock's key on servers 1, 2 and 3; A asks"),
          lazy_gettext("A is refused, and its token is left on none of servers 4 and 5"),
          lazy_gettext("A failed attempt must unlock every server: servers 4 and 5 said yes "
                       "to you. Before you return False, compare-and-delete your token on all "
                       "five (an EVAL of the compare-and-delete script, through fan_out)."),
          failed_attempt_unlocks),
)
FORGETFUL = (
    Check("C17", lazy_gettext("A locks servers 1-3 while 4 and 5 are down; 4 and 5 come back "
                              "empty, server 3 crashes and restarts empty only after one lease "
                              "(as the Redlock write-up advises); B asks before and after"),
          lazy_gettext("before: B refused; after: B holds, and A's lock says lost: one "
                       "holder at a time (restarted at once, server 3 "
                       "would give B a majority while A holds: no lock code prevents that)"),
          lazy_gettext("A Redlock holder must know when its lock may be gone: _still_held() "
                       "must say False once the validity (lease - time spent - drift) has run "
                       "out, and a majority means 3 of all 5 servers, never of those that "
                       "answered."), forgetful_server),
)
