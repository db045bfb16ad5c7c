"""What labs and sales share: runs numbered from 1, one at a time, each in a thread of
its own, every run kept so that the console can read it while it runs and after."""

from __future__ import annotations

import threading
from typing import Callable, Generic, Protocol, TypeVar

from lockshop.front_door import Refused
from shop.i18n import lazy_gettext


class Run(Protocol):
    number: int

    @property
    def running(self) -> bool: ...


R = TypeVar("R", bound=Run)


class Runner(Generic[R]):
    """Starts runs one at a time and keeps them all. Subclasses say what a run does
    (``_work``), and what a second one is told while the first runs (``_busy``)."""

    #: What a run is called in a 404 ("no lab run 7"); a catalog msgid (N_).
    kind = "run"

    def __init__(self) -> None:
        self._runs: dict[int, R] = {}
        self._guard = threading.Lock()

    def run(self, number: int) -> R:
        """Run ``number``, or a 404 that says what was not found."""
        try:
            return self._runs[number]
        except KeyError:
            raise Refused(404, lazy_gettext("no %(what)s %(number)s",
                                            what=lazy_gettext(self.kind), number=number)) from None

    def runs(self) -> list[R]:
        return list(self._runs.values())

    def current(self) -> R | None:
        """The latest run (running or not), or None before the first."""
        return self._runs[max(self._runs)] if self._runs else None

    def _start(self, new_run: Callable[[int], R], *args: object) -> R:
        """Make run number N with ``new_run(N)`` and work on it in a thread, with ``args``;
        a 409 while another runs. ``new_run`` may refuse too: nothing is kept then."""
        with self._guard:
            current = self.current()
            if current is not None and current.running:
                raise Refused(409, self._busy(current))
            run = new_run(len(self._runs) + 1)  # runs are never dropped: no gaps
            self._runs[run.number] = run
        threading.Thread(target=self._work, args=(run, *args), daemon=True,
                         name=f"{self.kind.replace(' ', '-')}-{run.number}").start()
        return run

    def _busy(self, running: R) -> object:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def _work(self, run: R, *args: object) -> None:  # pragma: no cover - likewise
        raise NotImplementedError
