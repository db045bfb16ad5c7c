"""A student's lock held in a process of its own, for the grader to kill or pause.

    python -m lockshop.exercises.holder FILE:Class (--redis URL | --zookeeper HOSTS
        | --database URL)
        --name NAME --lease-ms MS [--crash-after-first-write] [--fenced-write DB_URL]

It takes the lock and says ``acquired <fencing token>`` on its standard output,
then waits to be killed. With ``--crash-after-first-write`` it kills itself
(SIGKILL) right after the first command that writes the lock's key has been
answered, wherever in the lock's code that is: the grader's way to find the
moment between ``SETNX`` and ``EXPIRE`` without help from the code. With
``--fenced-write`` it waits for a line on its standard input, then writes
product 1's stock through the shop's fenced write with its fencing token and
says ``written`` or ``refused``: a late write, after a pause.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from locks import Backends, Strategy
from locks.custom import factory_for, load_lock_class
from locks.redis_support import Scripts
from lockshop.exercises.grading import wait_until_available
from lockshop.exercises.wire import WatchedRedis


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lockshop.exercises.holder")
    parser.add_argument("spec")
    parser.add_argument("--redis")
    parser.add_argument("--zookeeper")
    parser.add_argument("--database")
    parser.add_argument("--name", required=True)
    parser.add_argument("--lease-ms", type=int, required=True)
    parser.add_argument("--crash-after-first-write", action="store_true")
    parser.add_argument("--fenced-write")
    args = parser.parse_args(argv)

    lock_class = load_lock_class(args.spec)
    factory_class, _ = factory_for(lock_class)
    strategy = Strategy(name="exercise", family="custom", summary=args.spec,
                        correct_across_instances=True, factory="")
    factory = factory_class(strategy, Backends(redis_url=args.redis, zk_hosts=args.zookeeper,
                                               database_url=args.database,
                                               lease_ms=args.lease_ms))
    if args.crash_after_first_write:
        factory.client.close()
        factory.client = WatchedRedis.watching(args.redis, f"lockshop:lock:{args.name}")
        factory.scripts = Scripts(factory.client)

        def crash(kind: str, command: str) -> None:
            if kind in ("write", "script"):
                os.kill(os.getpid(), signal.SIGKILL)  # a crash: nothing after this runs

        factory.client.after = crash
    wait_until_available(factory)
    lock = factory.lock(args.name, timeout=10)
    if not lock.acquire():
        print("not acquired", flush=True)
        return 3
    print(f"acquired {lock.fencing_token if lock.fencing_token is not None else '-'}",
          flush=True)
    if args.fenced_write:
        sys.stdin.readline()  # the grader resumed us (SIGCONT) and says: write now
        print(late_write(args.fenced_write, lock.fencing_token), flush=True)
        return 0
    threading.Event().wait()  # hold until killed
    return 0


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


if __name__ == "__main__":
    sys.exit(main())
