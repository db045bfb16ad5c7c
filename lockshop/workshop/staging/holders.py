"""A lock holder in a process of its own, so that a lab can kill it as a crash would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# The holder takes the lock, says so, and sits in its critical section.
HOLDER = """
import json, sys, time, locks
from locks import Backends
from locks.custom import register_spec
from shop.config import Config
for plugged_in in Config.from_env().extra_locks:  # a student's lock (lab --lock)
    register_spec(plugged_in)
factory = locks.open_factory(sys.argv[1], Backends(**json.loads(sys.argv[2])))
deadline = time.monotonic() + 10
while not factory.available() and time.monotonic() < deadline:
    time.sleep(0.02)
assert factory.lock(sys.argv[3]).acquire(), "the holder could not take the lock"
print("held", flush=True)
time.sleep(60)
"""


@contextmanager
def holder_process(strategy: str, lock_name: str = "product:1", **backends) -> Iterator[str]:
    """A process holding ``lock_name`` under ``strategy``; yields what it said ("held").
    Killed (SIGKILL) on leaving the block, if it is still alive."""
    with subprocess.Popen([sys.executable, "-c", HOLDER, strategy, json.dumps(backends),
                           lock_name], stdout=subprocess.PIPE, text=True,
                          start_new_session=True) as holder:
        try:
            yield holder.stdout.readline().strip()
        finally:
            kill(holder)


def kill(holder: subprocess.Popen) -> int:
    """SIGKILL the holder (no release, no goodbye); its exit status."""
    if holder.poll() is None:
        os.killpg(holder.pid, signal.SIGKILL)
    return holder.wait()
