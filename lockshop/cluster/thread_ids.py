"""Threads that reuse a dead thread's id, on cue: how lab C49, exercise 4's C49 check
and the owner tests stage "the next thread Python starts is given a dead thread's id".

Python's thread id (``threading.get_ident()``) is the address of the thread's stack, and
the C library hands a freed stack to the next thread it starts. But ``join()`` returns a
little before the stack is counted as free: a thread started at once may get another
stack, so another id, and which id comes back would be left to timing (on a busy
machine, a test once saw the id it waited for come back once in 500 threads). So each
thread here is waited out until the kernel has let it go too; then the next thread is
given its stack, and its id, every time.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

WAIT_S = 10.0


def in_a_thread(action: Callable[[], object], *, wanted_id: int | None = None,
                tries: int = 50, timeout: float = WAIT_S) -> tuple[object, int]:
    """Run ``action`` in a new thread that then ends, all the way: (what it returned,
    the thread's id). Its error, if it raised, is raised here.

    With ``wanted_id``, only in a thread Python gave that id: threads are started (and
    end at once) until one gets it, in case a thread started elsewhere took it between.
    """
    for _attempt in range(tries):
        outcome: Future = Future()
        ident = _one_thread(action, wanted_id, outcome, timeout)
        if outcome.done():
            return outcome.result(), ident
    raise RuntimeError(f"no new thread was given the id {wanted_id} in {tries} tries")


def given_a_dead_threads_id(action: Callable[[], object], later: int,
                            timeout: float = WAIT_S) -> tuple[object, list[object]]:
    """``action`` in a thread that then ends, and again in ``later`` threads one after
    another, each given that first thread's id by Python: what the first returned, and
    what each later one did."""
    first, dead_id = in_a_thread(action, timeout=timeout)
    return first, [in_a_thread(action, wanted_id=dead_id, timeout=timeout)[0]
                   for _thread in range(later)]


def _one_thread(action, wanted_id, outcome: Future, timeout: float) -> int:
    """Start a thread, run ``action`` there into ``outcome`` if its id is wanted, and
    return its id once it has ended in the kernel too."""
    ids: list[tuple[int, int]] = []

    def body() -> None:
        ids.append((threading.get_ident(), threading.get_native_id()))
        if wanted_id is None or ids[0][0] == wanted_id:
            try:
                outcome.set_result(action())
            except BaseException as error:  # noqa: BLE001 - raised again by in_a_thread
                outcome.set_exception(error)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"the thread did not end within {timeout:g} s")
    ident, task = ids[0]
    _wait_until_gone(task, timeout)
    return ident


def _wait_until_gone(task: int, timeout: float) -> None:
    """Until the kernel no longer lists the thread among this process's tasks."""
    deadline = time.monotonic() + timeout
    while os.path.exists(f"/proc/self/task/{task}"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"thread {task} was still there after {timeout:g} s")
        time.sleep(0.001)
