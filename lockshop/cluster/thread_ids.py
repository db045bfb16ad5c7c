"""Threads that reuse a dead thread's id, on cue: how lab C49, exercise 4's C49 check
and the owner tests stage "the next thread Python starts is given a dead thread's id".

Python's thread id (``threading.get_ident()``) is the address of the thread's stack, and
the C library keeps freed stacks in a cache, handing the one freed last to the next thread
it starts. Two things would leave the id that comes back to timing:

* ``join()`` returns a little before the stack is counted as free, so each thread here is
  waited out until the kernel has let it go too;
* a thread that ended elsewhere after the dead one (a watchdog, another test's worker)
  puts its stack on top of the dead one's: a thread that starts and ends again takes that
  one every time. So a thread that was not given the wanted id is kept waiting, holding
  its stack, and the next one is given the stack below it, until one gets the wanted id.
  Those kept waiting end first, and the one with the wanted id last, so that its stack is
  on top again for the next thread that wants it.
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

    With ``wanted_id``, only in a thread Python gave that id: up to ``tries`` threads are
    started, each kept waiting while the next starts, until one gets it.
    """
    kept: list[_Thread] = []
    try:
        for _attempt in range(tries):
            thread = _Thread(action, wanted_id, timeout)
            if thread.outcome.done():
                _end(kept, timeout)
                kept = []
                thread.end(timeout)
                return thread.outcome.result(), thread.ident
            kept.append(thread)
    finally:
        _end(kept, timeout)
    raise RuntimeError(f"no new thread was given the id {wanted_id} in {tries} tries")


def given_a_dead_threads_id(action: Callable[[], object], later: int,
                            timeout: float = WAIT_S) -> tuple[object, list[object]]:
    """``action`` in a thread that then ends, and again in ``later`` threads one after
    another, each given that first thread's id by Python: what the first returned, and
    what each later one did."""
    first, dead_id = in_a_thread(action, timeout=timeout)
    return first, [in_a_thread(action, wanted_id=dead_id, timeout=timeout)[0]
                   for _thread in range(later)]


class _Thread:
    """A thread that runs ``action`` if its id is wanted (or any id is), then waits to be
    told to end: it holds its stack, and so its id, until then."""

    def __init__(self, action: Callable[[], object], wanted_id: int | None,
                 timeout: float) -> None:
        self.outcome: Future = Future()
        self._leave = threading.Event()
        self._started = threading.Event()
        self._ids: tuple[int, int] = (0, 0)
        self._thread = threading.Thread(target=self._body, args=(action, wanted_id, timeout),
                                        daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise TimeoutError(f"the thread did not start within {timeout:g} s")

    @property
    def ident(self) -> int:
        return self._ids[0]

    def _body(self, action, wanted_id, timeout) -> None:
        self._ids = (threading.get_ident(), threading.get_native_id())
        if wanted_id is None or self._ids[0] == wanted_id:
            try:
                self.outcome.set_result(action())
            except BaseException as error:  # noqa: BLE001 - raised again by in_a_thread
                self.outcome.set_exception(error)
        self._started.set()
        self._leave.wait(timeout)

    def end(self, timeout: float) -> None:
        """Let it end, and return once the kernel has let it go too."""
        self._leave.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"the thread did not end within {timeout:g} s")
        _wait_until_gone(self._ids[1], timeout)


def _end(threads: list[_Thread], timeout: float) -> None:
    for thread in reversed(threads):
        thread.end(timeout)


def _wait_until_gone(task: int, timeout: float) -> None:
    """Until the kernel no longer lists the thread among this process's tasks."""
    deadline = time.monotonic() + timeout
    while os.path.exists(f"/proc/self/task/{task}"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"thread {task} was still there after {timeout:g} s")
        time.sleep(0.001)
