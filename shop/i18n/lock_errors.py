"""The ``locks`` package's errors, said in the reader's language.

``locks`` is the lesson and imports nothing of the shop: its errors keep their English
texts (a ``LockLost`` reason such as "the 200 ms lease expired before release"). Whatever
shows one to a reader (the API, the CLI, a lab, the grader) says it through here: each
reason ``locks`` and the shop's guards give is listed below as a template, matched, and
said through the catalog with its figures. A reason not listed is shown as it is
(a student's own lock may give any); tests/test_chinese_style.py checks that every
literal reason in ``locks/`` and ``shop/`` is listed.
"""

from __future__ import annotations

import re
from functools import cache

from locks import BackendUnavailable, LockError, LockLost, LockNotAcquired, LockNotOwned
from shop.i18n import N_, _

#: Every reason a ``LockLost`` is raised with, as a template of its figures.
REASONS = (
    N_("the %(lease_ms)s ms lease expired before release"),
    N_("lease of %(lease_ms)s ms expired and the lock was taken over"),
    N_("re-entry refused: the lock is no longer ours"),
    N_("not acquired, or already released"),
    N_("the backend no longer shows this owner"),
    N_("only %(deleted)s of %(servers)s servers still held it at release"),
    N_("not the leader"),
    N_("our node is gone: the ZooKeeper session ended"),
    N_("a later holder has handed in a newer fencing token"),
    N_("a later fire time has taken the job's row"),
    N_("the job ran longer than its lock may be held"),
    # the exercise skeletons' own
    N_("the lease expired"),
    N_("session ended"),
)
#: What a backend that cannot be reached is called in ``BackendUnavailable``.
BACKENDS = (
    N_("redis (%(reachable)s of %(servers)s servers reachable, %(needed)s needed)"),
    N_("redis"), N_("zookeeper"), N_("database"),
)

#: Every message ``locks.custom.LockClassError`` gives (a student's file that gives no
#: lock), the most particular first.
CLASS_ERRORS = (
    N_("%(where)s: has no class %(name)s (its lock classes: %(found)s)"),
    N_("%(where)s: has no class %(name)s (its leader election classes: %(found)s)"),
    N_("%(where)s: has no class %(name)s (its job guard classes: %(found)s)"),
    N_("%(where)s: has no class %(name)s"),
    N_("%(where)s: %(name)s is not a lock class (a subclass of DistributedLock)"),
    N_("%(where)s: has no lock class (a subclass of DistributedLock)"),
    N_("%(where)s: has %(count)s lock classes (%(names)s): name one, as %(example)s"),
    # a student's leader election (exercise 14), loaded as a lock class is
    N_("%(where)s: %(name)s is not a leader election class (a subclass of Candidate)"),
    N_("%(where)s: has no leader election class (a subclass of Candidate)"),
    N_("%(where)s: has %(count)s leader election classes (%(names)s): name one, as "
       "%(example)s"),
    N_("%(target)s: no such file or module"),
    N_("%(path)s: no such file"),
    N_("%(where)s: syntax error: %(message)s"),
    N_("%(name)s extends neither a Redis nor a ZooKeeper lock base: lockshop cannot tell "
       "which server it needs"),
    N_("strategy %(name)s is already registered"),
    N_("%(spec)s: expected name=FILE[:Class]"),
    # a job guard's file (shop.jobs.custom)
    N_("%(where)s: %(name)s is not a job guard class (a subclass of JobGuard)"),
    N_("%(where)s: has no job guard class (a subclass of JobGuard)"),
    N_("%(where)s: has %(count)s job guard classes (%(names)s): name one, as %(example)s"),
    N_("job guard %(name)s is already registered"),
    # ``shop.orders.custom_steps.OrderStepError``: a file that gives no order step.
    N_("%(where)s: has no order step (a subclass of OrderStep)"),
    N_("%(where)s: has %(count)s order steps (%(names)s): name one"),
    N_("%(where)s: has no %(name)s (its order steps: %(found)s)"),
    N_("%(where)s: %(name)s is neither an order step (a subclass of OrderStep) nor a "
       "function"),
    N_("%(where)s: %(name)s() failed: %(error)s"),
    N_("%(spec)s: expected name=FILE[:Name]"),
    N_("%(where)s: has no %(name)s"),
)


@cache
def _pattern(template: str) -> re.Pattern:
    parts = re.split(r"%\((\w+)\)s", template)
    regex = "".join(re.escape(part) if index % 2 == 0 else f"(?P<{part}>.+?)"
                    for index, part in enumerate(parts))
    return re.compile(regex + r"\Z")


def say_reason(reason: str, templates: tuple[str, ...] = REASONS) -> str:
    """``reason`` (English, from ``locks``) in the current language, when it is listed."""
    for template in templates:
        found = _pattern(template).match(reason)
        if found:
            return _(template, **found.groupdict())
    return reason


def say_lock_error(error: BaseException) -> str:
    """A lock error as a reader reads it: what happened, and to which lock."""
    if isinstance(error, LockError) and not hasattr(error, "name"):
        return str(error)  # made without its fields (only its text came): its own words
    if isinstance(error, LockLost):
        return _("lock %(lock)s was lost while held: %(reason)s", lock=error.name,
                 reason=say_reason(error.reason))
    if isinstance(error, LockNotAcquired):
        return _("lock %(lock)s was not acquired within %(timeout)s s", lock=error.name,
                 timeout=f"{error.timeout:g}")
    if isinstance(error, LockNotOwned):
        return _("lock %(lock)s was released by %(owner)s, who does not hold it",
                 lock=error.name, owner=error.owner or "?")
    if isinstance(error, BackendUnavailable):
        cause = error.__cause__
        said = _("%(backend)s cannot be reached (lock %(lock)s)",
                 backend=say_reason(error.backend, BACKENDS), lock=error.name)
        return _("%(error)s: %(cause)s", error=said, cause=_cause(cause)) if cause else said
    if isinstance(error, LockError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _cause(cause: BaseException) -> str:
    """A client library's error: its own words are English, so name only what it was."""
    text = str(cause)
    if "Connection refused" in text or isinstance(cause, ConnectionRefusedError):
        return _("connection refused")
    if "not connected" in text.lower() or "SUSPENDED" in text:
        return _("not connected (the session is suspended)")
    return type(cause).__name__


def named(error: BaseException) -> str:
    """The error's class (an identifier the reader finds in the code), then what it says:
    "BackendUnavailable: redis cannot be reached (lock 'product:1'): connection refused"."""
    if not isinstance(error, LockError):
        return f"{type(error).__name__}: {error}"
    return _("%(error)s: %(message)s", error=type(error).__name__,
             message=say_lock_error(error))


def say_class_error(error: Exception) -> str:
    """A ``LockClassError`` (the student's file gives no lock class) in the reader's
    language; one the grader already said through the catalog stays as it is."""
    return say_reason(str(error), CLASS_ERRORS)
