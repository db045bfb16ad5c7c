"""Who is asking for a lock: an owner name that no other thread or task ever gets.

A reentrant lock lets its *owner* in again. Redisson names the owner
``UUID:threadId``, and in Java that is safe: a thread's id is never given
to another thread. In Python it is not safe. ``threading.get_ident()`` is
handed to the next thread as soon as a thread ends, and ``id(task)`` to the
next object that lands at the same address. An owner built from either lets
a new thread walk into the lock a dead thread left held: mutual exclusion is
gone, and nothing says so.

So an owner here is made the first time a thread (or an asyncio task) asks,
from a random part, and kept with that thread (``threading.local``, which
dies with the thread) or that task (a weak map, which forgets it with the
task). Host, process and thread id stay in the name, for a person reading
a lock dump; the random part is what makes it unique.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import uuid
import weakref

_HOST = socket.gethostname()  # once: a syscall per lock would show in the benchmark

_this_thread = threading.local()
_task_owners: weakref.WeakKeyDictionary[asyncio.Task, str] = weakref.WeakKeyDictionary()
_task_owners_guard = threading.Lock()  # event loops in several threads may ask at once


def current_owner() -> str:
    """The owner name of the running thread, or of the running asyncio task.

    ``host:pid:thread:<random>``, and ``...:task-<random>`` inside a task:
    tasks of one event loop share a thread, and each is an owner of its own.
    """
    owner = getattr(_this_thread, "owner", None)
    if owner is None:
        owner = _this_thread.owner = f"{_HOST}:{os.getpid()}:{threading.get_ident()}:{_fresh()}"
    task = _running_task()
    if task is None:
        return owner
    with _task_owners_guard:
        task_owner = _task_owners.get(task)
        if task_owner is None:
            task_owner = _task_owners[task] = f"{owner}:task-{_fresh()}"
    return task_owner


def _fresh() -> str:
    return uuid.uuid4().hex[:12]


def _running_task() -> asyncio.Task | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no event loop running in this thread
        return None
