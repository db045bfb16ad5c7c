"""Exercise 9: the token lock released with WATCH/GET/MULTI/DEL/EXEC (article A2).

The token checks (C11, C12) are exercise 3's, with hints said for a release
that checks the token itself: the gap between its GET and its DEL is closed
by WATCH, which makes EXEC refused if the key changed in between. C37 forces
that refusal from outside: the release is paused right after its GET, another
client renews the key (a watchdog's PEXPIRE: the key is still the holder's),
and the release goes on. Its EXEC is refused; a release that reads the key
again finds it still its own and deletes it. One that gives up leaves its own
key behind until the lease ends, and every other owner waits that long.
"""

from __future__ import annotations

from dataclasses import replace

from lockshop.cluster.wire import SCRIPTS
from lockshop.exercises.checks.redis_steps import TOKEN, pause_after_first_read
from lockshop.exercises.grading import Background, Check, Grading, NotApplicable, release_said
from shop.i18n import _, lazy_gettext

#: A lease far longer than the check: a key left behind is still there when looked at.
LONG_LEASE_MS = 5000


def conflict_in_release(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("watch")
    key = grading.key_of(name)
    factory = grading.factory(lease_ms=LONG_LEASE_MS, watched_key=key)
    a = grading.take(factory, name)
    if a is None:
        return _("A could not take the free lock"), False
    paused, go = pause_after_first_read(factory.client)
    acquired_with = len(factory.client.commands)
    releasing = Background(release_said, a)
    grading.until(lambda: paused.is_set() or releasing.done(), seconds=10)
    if not paused.is_set():
        releasing.result(10)
        sent = factory.client.commands[acquired_with:]
        if any(command in SCRIPTS for command in sent):
            return _("A's release compared and deleted in one script: nothing can change "
                     "the key between its read and its delete (it sent %(commands)s)",
                     commands=", ".join(sent)), NotApplicable(see="C12")
        return _("A's release never read the key (it sent %(commands)s): it does not "
                 "compare at all", commands=", ".join(sent) or "-"), NotApplicable(see="C11")
    # A has read its own token. Its watchdog (another client) renews the lease now: the
    # key changes, but it is still A's.
    grading.redis().pexpire(key, LONG_LEASE_MS)
    go.set()
    said = releasing.result(10)
    sent = factory.client.commands[acquired_with:]
    left = grading.redis().exists(key)
    if left:
        return _("A's release %(said)s after its EXEC was refused, and its own key is still "
                 "there, for %(ms)s ms more: every other owner waits that long (A sent "
                 "%(commands)s)", said=said, ms=grading.redis().pttl(key),
                 commands=", ".join(sent)), False
    if said != _("returned"):
        return _("A's key is gone, but its release raised LockLost: the lock was still A's "
                 "(A sent %(commands)s)", commands=", ".join(sent)), False
    if "WATCH" not in sent:
        # Nothing watched the key, so nothing could refuse the delete: C12's mistake.
        return _("A's release deleted its key with nothing watching it (A sent "
                 "%(commands)s)", commands=", ".join(sent)), NotApplicable(see="C12")
    return _("A's EXEC was refused, A went round again and deleted its own key (A sent "
             "%(commands)s)", commands=", ".join(sent)), True


#: The token lock's checks, with hints for a release written with WATCH rather than Lua.
WATCH_TOKEN = (
    replace(TOKEN[0], hint=lazy_gettext(
        "A plain DEL deletes whoever's lock is there. WATCH the key, GET it, and only if its "
        "value is self.token delete it in MULTI/DEL/EXEC (a pipeline of self.client); if it "
        "is another token, raise LockLost and leave it.")),
    replace(TOKEN[1], expected=lazy_gettext(
        "B's lock stays: the key changed after A's read, so A's delete is refused"),
        hint=lazy_gettext(
        "GET, compare, then DEL is two steps with a gap between them. WATCH the key before "
        "the GET, on the same pipeline: then an EXEC after the key changed is refused "
        "(redis.WatchError) instead of deleting the next holder's key; after a refusal, read "
        "the key again before deciding, never delete without a new read.")),
)
CONFLICT = (
    Check("C37", lazy_gettext("A's release is paused right after its GET; another client "
                              "renews A's key (PEXPIRE, as a watchdog does), then A goes on"),
          lazy_gettext("A's EXEC is refused (the key changed); A reads the key again, finds "
                       "its own token, and deletes it: the lock is free at once"),
          lazy_gettext("A refused EXEC (redis.WatchError) only says the key changed after your "
                       "GET, not that it is another's. Loop: WATCH, GET, compare, MULTI/DEL/"
                       "EXEC; on WatchError go round again; stop with LockLost only when the "
                       "GET shows another token or none."), conflict_in_release),
)
