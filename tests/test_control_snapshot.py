"""The one look that every polling browser shares (``lockshop.console.snapshot``): taken
once however many ask, a stale one answered at once while a new one is taken, and a
new one on demand after an action. Ordered by events, not by sleeps."""

from __future__ import annotations

import itertools
import threading

from helpers import wait_for
from lockshop.console.snapshot import Snapshot


class Look:
    """A look that counts how often it was taken, and waits at ``gate`` while shut."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()
        self.taken = itertools.count(1)
        self.started = 0

    def __call__(self) -> int:
        self.started += 1
        assert self.gate.wait(30), "the test never opened the gate"
        return next(self.taken)


def test_the_first_look_is_taken_once_for_every_asker_at_the_time():
    look = Look()
    look.gate.clear()
    snapshot = Snapshot(look, seconds=60)
    answers = []
    askers = [threading.Thread(target=lambda: answers.append(snapshot.get()))
              for _ in range(8)]
    for asker in askers:
        asker.start()
    wait_for(lambda: look.started == 1)
    look.gate.set()
    for asker in askers:
        asker.join(30)
    assert answers == [1] * 8 and look.started == 1


def test_a_stale_look_is_answered_at_once_while_a_new_one_is_taken():
    look = Look()
    snapshot = Snapshot(look, seconds=0)  # stale as soon as taken
    assert snapshot.get() == 1
    look.gate.clear()  # the next look waits until the test says
    assert snapshot.get() == 1  # the last one, at once; a new one is being taken
    wait_for(lambda: look.started == 2)
    assert snapshot.get() == 1 and look.started == 2  # not a second one meanwhile
    look.gate.set()
    wait_for(lambda: snapshot.get() >= 2)


def test_renew_takes_a_new_look_for_the_caller_and_those_after():
    look = Look()
    snapshot = Snapshot(look, seconds=60)
    assert snapshot.get() == 1
    assert snapshot.renew() == 2  # after an action: its answer shows what changed
    assert snapshot.get() == 2
