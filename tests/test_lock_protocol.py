"""The grader reads the student's lock errors back from the lock host as untrusted text.

A student's own exception named like one of the ``locks`` errors, or a forged answer,
must never crash the grader when it says the error (the verdict would be lost): its
fields are believed only whole and of their types, else it is said as its text.
"""

from __future__ import annotations

import pytest

from lockshop.exercises.remote_locks import RaisedInHost, raised
from locks.errors import LockLost, LockNotAcquired, LockNotOwned
from shop.i18n.lock_errors import say_lock_error

HALF_MADE = [
    ("LockNotAcquired", {"name": "x"}),  # no timeout
    ("LockNotAcquired", {"name": "x", "timeout": "abc"}),  # a timeout that is no number
    ("LockNotAcquired", {"name": "x", "timeout": True}),
    ("LockNotOwned", {"owner": "B"}),  # no name
    ("LockLost", {"name": 7, "reason": "the lease expired"}),
    ("LockLost", "not a dict"),
    ("BackendUnavailable", {"name": "x", "backend": ["redis"]}),
]


@pytest.mark.parametrize(("kind", "fields"), HALF_MADE)
def test_a_lock_error_with_half_its_fields_is_said_as_its_text(kind, fields):
    error = raised({"type": kind, "message": "the student's own words", "fields": fields})
    assert type(error).__name__ == kind
    assert say_lock_error(error) == "the student's own words"


def test_a_whole_lock_error_is_said_in_the_readers_words():
    error = raised({"type": "LockNotAcquired", "message": "ignored",
                    "fields": {"name": "orders", "timeout": 0.5}})
    assert isinstance(error, LockNotAcquired) and error.timeout == 0.5
    assert say_lock_error(error) == "lock orders was not acquired within 0.5 s"
    lost = raised({"type": "LockLost", "message": "m",
                   "fields": {"name": "orders", "reason": "r" * 1000}})
    assert isinstance(lost, LockLost) and len(lost.reason) == 300
    owned = raised({"type": "LockNotOwned", "message": "m", "fields": {"name": "orders"}})
    assert isinstance(owned, LockNotOwned) and owned.owner is None
    assert "?" in say_lock_error(owned)


def test_an_unknown_error_is_raised_in_the_host_by_its_name():
    error = raised({"type": "ZeroDivisionError", "message": "division by zero"})
    assert isinstance(error, RaisedInHost) and type(error).__name__ == "ZeroDivisionError"
    assert isinstance(raised("garbage"), RaisedInHost)
