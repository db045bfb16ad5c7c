"""``python -m lockshop.exercises.lock_host SPEC --channel FD [--election | --guard]``: a
student's lock (with ``--election``: leader election; with ``--guard``: job guard, whose
requests ``guard_host`` answers) in a process of its own, driven by the grader over
``lock_protocol``.

This process runs the student's code and is trusted with nothing: it loads the class
``SPEC`` names, makes factories and locks when asked, and answers each request with what
the lock's method returned or raised. It never sees the grader's results, counters or
report channel, and what it says is believed only as the lock's own answer would be.
Its own prints go to its standard output and error, which are not the channel.

It ends when the channel closes (the grader is done, or gone), whatever its threads are
doing: the grader then kills what is left of its process group.
"""

from __future__ import annotations

import argparse
import logging
import os
import queue
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

from lockshop.exercises.guard_host import GUARD_FAMILY, GUARD_OPS, Guards
from lockshop.exercises.lock_protocol import (
    ATTRIBUTES,
    LOCK_ERROR_FIELDS,
    MAX_MESSAGE,
    decode,
    encode,
    plain,
)


class Host:
    """The student's class, its factories and locks, and a thread per name the grader
    gives."""

    def __init__(self, lock_class: type, spec: str, channel: socket.socket, *,
                 election: bool = False, guard: bool = False) -> None:
        #: The student's lock class, or with ``election`` its ``Candidate`` class.
        self.lock_class = lock_class
        self.election = election
        self.spec = spec
        self.source = Path(spec.rpartition(":")[0] or spec).name
        self.channel = channel
        self.factories: dict[str, object] = {}
        self.locks: dict[str, object] = {}
        self.candidates: dict[str, object] = {}
        #: The grader's thread names -> (their requests, the thread that runs them).
        self.threads: dict[str, tuple[queue.SimpleQueue, threading.Thread]] = {}
        self._writing = threading.Lock()
        #: With ``guard``, the student's job guard class and its guards.
        self.job_guards = Guards(lock_class) if guard else None

    def send(self, message: dict) -> None:
        with self._writing:
            self.channel.sendall(encode(message))

    def serve(self) -> None:
        reader = self.channel.makefile("rb")
        for line in reader:
            try:
                request = decode(line)
            except ValueError:
                continue
            name = str(request.get("thread", "main"))
            if request.get("op") == "end_thread":
                self.end(name)
                continue
            if self.at_once(request):
                continue
            if name not in self.threads:
                requests: queue.SimpleQueue = queue.SimpleQueue()
                worker = threading.Thread(target=self._worker, args=(requests,),
                                          daemon=True, name=f"grader-{name}")
                self.threads[name] = (requests, worker)
                worker.start()
            self.threads[name][0].put(request)

    def at_once(self, request: dict) -> bool:
        """Whether ``request`` is one this host handles on its reader, at once and with no
        answer (an order step host's ``go``: its buyer's thread is busy in the step)."""
        return False

    def end(self, name: str) -> None:
        """The grader's thread ``name`` ended: end ours once its requests are done, and
        read on only when it is gone (the next thread may then be given its id), or after
        a second for one that hangs in the student's code."""
        requests, worker = self.threads.pop(name, (None, None))
        if worker is None:
            return
        requests.put(None)
        worker.join(1.0)
        native = worker.native_id
        for _wait in range(1000):
            if worker.is_alive() or not os.path.exists(f"/proc/self/task/{native}"):
                return
            time.sleep(0.001)

    def _worker(self, requests: queue.SimpleQueue) -> None:
        while True:
            request = requests.get()
            if request is None:
                return
            answer: dict = {"id": request.get("id")}
            try:
                answer["value"] = plain(self.do(request))
            except BaseException as error:  # noqa: BLE001 - every error is the lock's answer
                answer["error"] = self.described(error)
            try:
                self.send(answer)
            except OSError:
                return

    def described(self, error: BaseException) -> dict:
        frames = [f for f in traceback.extract_tb(error.__traceback__)
                  if Path(f.filename).name == self.source]
        fields = {key: value[:MAX_MESSAGE] if isinstance(value, str) else value
                  for key in LOCK_ERROR_FIELDS
                  if isinstance(value := getattr(error, key, None), (str, int, float))
                  and not isinstance(value, bool)}
        return {"type": type(error).__name__[:100], "message": str(error)[:MAX_MESSAGE],
                "fields": fields,
                "file": frames[-1].filename if frames else None,
                "line": frames[-1].lineno if frames else None}

    def do(self, request: dict) -> object:
        op = request.get("op")
        if op == "factory":
            from lockshop.cluster.holder import backends_of, student_factory
            import json
            backends = backends_of(json.dumps(request["backends"]))
            self.factories[request["factory"]] = election_factory(backends) \
                if self.election else student_factory(self.lock_class, self.spec, backends)
            return None
        if op == "candidate":  # one of the student's candidates, on a factory's session
            candidate = self.lock_class(self.factories[request["factory"]],
                                        str(request["group"]))
            self.candidates[request["candidate"]] = candidate.start()
            return None
        if op in ("is_leader", "ensure_leader", "stop"):
            return getattr(self.candidates[request["candidate"]], op)()
        if op == "failed":  # what ended a candidate's campaign, said as an error, or None
            failed = getattr(self.candidates[request["candidate"]], "failed", None)
            return self.described(failed) if isinstance(failed, BaseException) else None
        if op in ("lock", "read_lock"):  # read_lock: a read/write lock's read half
            factory = self.factories[request["factory"]]
            make = factory.lock if op == "lock" else factory.read_lock
            self.locks[request["lock"]] = make(str(request["name"]),
                                               timeout=float(request["timeout"]))
            return None
        if op == "acquire":
            timeout = request.get("timeout")
            return bool(self.locks[request["lock"]].acquire(
                blocking=bool(request.get("blocking", True)),
                timeout=None if timeout is None else float(timeout)))
        if op == "release":
            return self.locks[request["lock"]].release()
        if op == "ensure_held":
            return self.locks[request["lock"]].ensure_held()
        if op == "get" and request.get("attribute") in ATTRIBUTES:
            return getattr(self.locks[request["lock"]], request["attribute"], None)
        if op == "try_in_new_thread":
            from lockshop.cluster.thread_ids import in_a_thread
            factory, name = self.factories[request["factory"]], str(request["name"])
            wanted = request.get("wanted_id")
            taken, ident = in_a_thread(lambda: factory.lock(name).acquire(blocking=False),
                                       wanted_id=int(wanted) if wanted is not None else None,
                                       timeout=float(request.get("timeout", 10)))
            return {"taken": bool(taken), "thread_id": ident}
        if op == "close":
            factory = self.factories.pop(request["factory"], None)
            return factory.close() if factory is not None else None
        if op in GUARD_OPS and self.job_guards is not None:
            return self.job_guards.do(request)
        raise ValueError(f"no such op: {op!r}")


def election_factory(backends) -> object:
    """A ZooKeeper client for one candidate, as the shop gives its election one (the fair
    lock's factory). Ready: its server has answered."""
    from locks import Strategy
    from locks.zk_fair import ZkFairFactory
    from lockshop.cluster.holder import wait_until_available
    factory = ZkFairFactory(Strategy(name="exercise", family="custom", summary="election",
                                     correct_across_instances=True, factory=""), backends)
    wait_until_available(factory)
    return factory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lockshop.exercises.lock_host")
    parser.add_argument("spec")
    parser.add_argument("--channel", type=int, required=True)
    parser.add_argument("--election", action="store_true")
    parser.add_argument("--guard", action="store_true")
    args = parser.parse_args(argv)
    channel = socket.socket(fileno=args.channel)
    # The grader steps into this process's traffic and kills it on purpose: its clients'
    # warnings are noise.
    for name in ("kazoo", "locks", "lockshop", "redis"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    from locks.custom import LockClassError, factory_for, load_election_class, load_lock_class
    try:
        if args.election:  # a Candidate: on ZooKeeper, as the shop runs it
            lock_class, family = load_election_class(args.spec), "zookeeper"
        elif args.guard:  # a JobGuard: made by the grader's runs, as the scheduler does
            from shop.jobs.custom import load_guard_class
            lock_class, family = load_guard_class(args.spec), GUARD_FAMILY
        else:
            lock_class = load_lock_class(args.spec)
            family = factory_for(lock_class)[1][0]
    except LockClassError as error:
        channel.sendall(encode({"load_error": str(error)[:MAX_MESSAGE]}))
        return 2
    channel.sendall(encode({"ready": {"class": lock_class.__name__, "family": family}}))
    Host(lock_class, args.spec, channel, election=args.election, guard=args.guard).serve()
    os._exit(0)  # the channel closed: nothing is waited for (a hung lock's threads)


if __name__ == "__main__":
    sys.exit(main())
