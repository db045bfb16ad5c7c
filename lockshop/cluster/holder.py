"""A lock held by a process of its own, for a lab or the grader to kill, pause or resume.

    python -m lockshop.cluster.holder (--strategy NAME | --lock FILE:Class)
        --backends JSON --name NAME [--timeout S] [--say-waiting] [--hold-seconds S]
        [--crash-after-first-write] [--fenced-write DB_URL]

The one protocol of every holder process, labs' and the grader's alike: it opens
the lock's factory, waits for its server, asks for the lock, and says one line on
its standard output, ``held <fencing token>`` (``-`` for a lock with none) or
``refused``; then it holds the lock until it is killed. With ``--say-waiting`` it
says ``waiting`` just before it asks (a waiter the lab pauses in its queue); with
``--hold-seconds`` it releases after that long and exits. ``--strategy`` is a
strategy of the registry (a student's own, plugged in with ``LOCKSHOP_EXTRA_LOCKS``
as for ``lab --lock``, is registered first); ``--lock`` is a student's class,
opened as the grader opens it (``student_factory``).

With ``--crash-after-first-write`` it kills itself (SIGKILL) right after the first
command that writes the lock's key has been answered, wherever in the lock's code
that is: the grader's way to find the moment between ``SETNX`` and ``EXPIRE``
without help from the code. With ``--fenced-write`` it waits for a line on its
standard input, then writes product 1's stock through the shop's fenced write with
its fencing token and says ``written`` or ``refused``: a late write, after a pause.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from locks import Backends, DistributedLock, LockFactory, Strategy

#: The first word of a holder that has the lock; of one that was refused; of one about to ask.
HELD, REFUSED, WAITING = "held", "refused", "waiting"
#: The key a Redis lock of ``name`` lives at (every Redis lock base keeps it there).
KEY_PREFIX = "lockshop:lock:"


def held(line: str) -> bool:
    """Whether a holder's line says it holds the lock."""
    return line.split(" ", 1)[0] == HELD


def token_of(line: str) -> str:
    """The fencing token a ``held`` line gives ("-" for a lock with none)."""
    return line.split(" ", 1)[1] if " " in line else "-"


# --- the factory the process (and the grader) opens ------------------------------------------

def student_factory(lock_class: type[DistributedLock], spec: str, backends: Backends, *,
                    watched_key: str | None = None) -> LockFactory:
    """A factory of a student's lock class, outside the registry of strategies (a grader
    grades many classes in one process); with ``watched_key``, on a ``WatchedRedis``
    that watches the commands on that key. Ready: its server has answered."""
    from locks.custom import factory_for
    factory_class, _requires = factory_for(lock_class)
    strategy = Strategy(name="exercise", family="custom", summary=spec,
                        correct_across_instances=True, factory="")
    factory = factory_class(strategy, backends)
    if watched_key is not None:
        from locks.redis_support import Scripts
        from lockshop.cluster.wire import WatchedRedis
        factory.client.close()
        factory.client = WatchedRedis.watching(backends.redis_url, watched_key,
                                               socket_timeout=5)
        factory.scripts = Scripts(factory.client)
    wait_until_available(factory)
    return factory


def backends_of(text: str) -> Backends:
    """``Backends`` from its fields as JSON (Redlock's ``redis_urls``: a list there)."""
    fields = json.loads(text)
    fields["redis_urls"] = tuple(fields.get("redis_urls") or ())
    return Backends(**fields)


def wait_until_available(factory: LockFactory, seconds: float = 10.0) -> None:
    pause = threading.Event()
    for _attempt in range(int(seconds / 0.02)):
        if factory.available():
            return
        pause.wait(0.02)
    raise RuntimeError("the lock's server did not answer in time")


# --- the process ------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lockshop.cluster.holder")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--strategy")
    which.add_argument("--lock")
    parser.add_argument("--backends", required=True, help="Backends' fields, as JSON")
    parser.add_argument("--name", required=True)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--say-waiting", action="store_true")
    parser.add_argument("--hold-seconds", type=float)
    parser.add_argument("--crash-after-first-write", action="store_true")
    parser.add_argument("--fenced-write")
    args = parser.parse_args(argv)

    backends = backends_of(args.backends)
    watched = KEY_PREFIX + args.name if args.crash_after_first_write else None
    factory = _open(args, backends, watched)
    if watched is not None:
        def crash(kind: str, command: str) -> None:
            if kind in ("write", "script"):
                os.kill(os.getpid(), signal.SIGKILL)  # a crash: nothing after this runs

        factory.client.after = crash
    lock = factory.lock(args.name, timeout=args.timeout)
    if args.say_waiting:
        print(WAITING, flush=True)
    if not lock.acquire():
        print(REFUSED, flush=True)
        return 3
    token = lock.fencing_token
    print(f"{HELD} {token if token is not None else '-'}", flush=True)
    if args.fenced_write:
        sys.stdin.readline()  # resumed (SIGCONT), and told: write now
        print(late_write(args.fenced_write, token), flush=True)
        return 0
    if args.hold_seconds is not None:
        threading.Event().wait(args.hold_seconds)
        lock.release()
        return 0
    threading.Event().wait()  # hold until killed
    return 0


def _open(args, backends: Backends, watched_key: str | None) -> LockFactory:
    if args.lock:
        from locks.custom import load_lock_class
        return student_factory(load_lock_class(args.lock), args.lock, backends,
                               watched_key=watched_key)
    import locks
    from locks.custom import register_spec
    from shop.config import Config
    for plugged_in in Config.from_env().extra_locks:  # a student's lock (lab --lock)
        register_spec(plugged_in)
    factory = locks.open_factory(args.strategy, backends)
    wait_until_available(factory)
    return factory


def late_write(database_url: str, fencing_token: int | None) -> str:
    """Write product 1's stock as an order would, through the shop's fenced write."""
    from shop.errors import StaleWriteRejected
    from shop.orders.order_path import write_stock
    from shop.store.db import make_engine
    engine = make_engine(database_url)
    try:
        with engine.begin() as db:
            write_stock(db, 1, 0, fencing_token)
        return "written"
    except StaleWriteRejected:
        return "refused"
    finally:
        engine.dispose()


# --- the process, seen from outside ------------------------------------------------------------

class Holder:
    """A holder process (``main``), started in a session of its own: its lines, its signals."""

    def __init__(self, *args: str, env: dict[str, str] | None = None,
                 launcher: Callable[[list[str]], list[str]] = list) -> None:
        """``launcher``: the command line as it is run (the grader's: as the student's
        user, ``lockshop.exercises.remote_locks.as_student``)."""
        self.process = subprocess.Popen(
            launcher([sys.executable, "-m", "lockshop.cluster.holder", *args]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**(env or os.environ), "PYTHONUNBUFFERED": "1"}, start_new_session=True)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def next_line(self, seconds: float = 15.0) -> str | None:
        """Its next line, stripped; None when it said none in ``seconds`` or is ending (then
        let it end, to say what it died of: ``last_words``)."""
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self.process.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(seconds)
        if line and line[0]:
            return line[0].strip()
        if line:  # the end of its output: it is dying
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        return None

    def last_words(self) -> str | None:
        """The last line it wrote on its standard error, once it has exited; else None."""
        if self.process.poll() is None:
            return None
        said = self.process.stderr.read().strip().splitlines()
        return said[-1] if said else ""

    def pause(self) -> None:
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def tell(self, line: str) -> None:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def kill_now(self) -> None:
        """SIGKILL its process group, from any thread, without waiting (``kill`` reaps)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def kill(self) -> int:
        """SIGKILL (a crash: no release, no goodbye), and close our ends of its pipes; its
        exit status."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            stream.close()
        return self.process.returncode


@contextmanager
def holder_process(strategy: str, lock_name: str = "product:1", **backends
                   ) -> Iterator[str]:
    """A process holding ``lock_name`` under ``strategy``; yields the first word it said
    (``HELD``). Killed (SIGKILL) on leaving the block, if it is still alive."""
    holder = Holder("--strategy", strategy, "--backends", json.dumps(backends),
                    "--name", lock_name)
    try:
        said = holder.next_line(30)
        yield said.split(" ", 1)[0] if said else ""
    finally:
        holder.kill()


if __name__ == "__main__":
    sys.exit(main())
