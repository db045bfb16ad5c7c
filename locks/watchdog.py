"""A watchdog: a thread that renews a lease while its holder lives (Redisson's idea).

Started when a lock is taken, it calls ``renew()`` every ``interval`` seconds
until it is stopped (the release) or a renewal fails (the lock is no longer
ours, or the backend cannot be reached): then it records why, and the lock
is *lost*. It lives in the holder's process, so it dies with it: a dead
holder's lease runs out one lease after its last renewal.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class LeaseWatchdog:
    """Renews a lease every ``interval`` seconds until stopped or a renewal fails."""

    def __init__(self, name: str, renew: Callable[[], bool], interval: float,
                 on_renewed: Callable[[], None] = lambda: None,
                 renewal_errors: tuple[type[BaseException], ...] = ()) -> None:
        self._renew = renew
        self._interval = interval
        self._on_renewed = on_renewed
        self._errors = renewal_errors
        self._stop = threading.Event()
        #: Why the lease was lost, once a renewal failed; None while all is well.
        self.lost_reason: str | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"watchdog {name}")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                renewed = self._renew()
            except self._errors as error:
                renewed, reason = False, f"renewal failed: {error}"
            else:
                reason = "the lock expired or was taken before the watchdog renewed it"
            if not renewed:
                self.lost_reason = reason
                return
            self._on_renewed()

    def stop(self) -> None:
        """Stop renewing (the holder releases); waits for a renewal under way."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
