"""``python -m lockshop.exercises.step_host SPEC --channel FD``: a student's order step in a
process of its own, driven by the grader over ``lock_protocol`` (its order step's ops).

This process runs the student's code and is trusted with nothing, as a lock host is
(``lock_host``, whose threads and answers it shares): it loads the step ``SPEC`` names
(``shop.orders.custom_steps.load_order_step``), and for each ``place`` request calls the
step's ``place`` in the grader's thread's host thread, on an engine of its own made from
the database URL the request names (each URL's engine made once, and disposed of when
the grader says ``forget``). The grader gives it that URL and nothing else: the
grading's database, with the one credential the student's SQL needs. In the room that is
the grading's own MariaDB user (``lockshop.room.grading_databases``: its database alone,
a capped number of connections, through the socket the sandbox shows it; root logs in by
``unix_socket`` only, so not as ``nobody``), or a SQLite file of the grader's opened to
the student's user (``databases.students_file``). On a student's own machine it is the
URL the grader made its scratch database with, on the machine's MariaDB: theirs already.
It never sees the grader's own connections, and what it could do to the database with
that user (replace the view of lock waits the grader reads, ``checks.row_locks``) the
grader does not believe.

The business delay the step calls (``business_delay(context, sleep)``: the ``sleep`` it
is handed) is the grader's: the host says ``delay`` for that request and waits until
the grader's ``go`` for it, which its reader handles at once (the request's own thread
is in the step). What the step came to goes back as JSON: the placed order's id, or the
error it raised with the shop's error code or the database's error number where it has
one. The grader believes that as the step's own answer and no further: its verdicts
rest on what it reads from the database and on its own barriers.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import threading
import traceback
from pathlib import Path

from lockshop.exercises.lock_host import Host
from lockshop.exercises.lock_protocol import LOCK_ERROR_FIELDS, MAX_MESSAGE, encode


class StepHost(Host):
    """The student's order step, its engines, and the buyers held in their delay."""

    def __init__(self, step: object, spec: str, channel: socket.socket) -> None:
        super().__init__(type(step), spec, channel)
        self.step = step
        self._engines: dict[str, object] = {}
        self._engines_guard = threading.Lock()
        #: The ``place`` requests in their business delay -> what lets them go on.
        self._gates: dict[int, threading.Event] = {}
        self._gates_guard = threading.Lock()

    def at_once(self, request: dict) -> bool:
        if request.get("op") != "go":
            return False
        with self._gates_guard:
            gate = self._gates.pop(request.get("place"), None)
        if gate is not None:
            gate.set()
        return True

    def do(self, request: dict) -> object:
        op = request.get("op")
        if op == "place":
            return self.place(request)
        if op == "forget":
            with self._engines_guard:
                engine = self._engines.pop(str(request.get("database")), None)
            return engine.dispose() if engine is not None else None
        raise ValueError(f"no such op: {op!r}")

    def engine(self, url: str):
        """The engine of ``url``, made as the shop makes its own (once per URL)."""
        from shop.store.db import make_engine
        with self._engines_guard:
            if url not in self._engines:
                self._engines[url] = make_engine(url)
            return self._engines[url]

    def place(self, request: dict) -> dict | None:
        from shop.orders.order_path import OrderContext, OrderRequest
        from shop.store.models import ProductKind
        number = request.get("id")
        asked, said = request["request"], request["context"]
        order_request = OrderRequest(int(asked["product_id"]), int(asked["quantity"]),
                                     _text_or_none(asked.get("seat")),
                                     _text_or_none(asked.get("key")))
        context = OrderContext(str(said["instance"]), str(said["strategy"]),
                               int(said["business_delay_ms"]), int(said["lock_timeout_ms"]))
        kind = ProductKind(request["kind"]) if request.get("kind") is not None else None
        engine = self.engine(str(request["database"]))

        def sleep(seconds: float) -> None:
            """The grader's delay: say so, and wait for its go."""
            gate = threading.Event()
            with self._gates_guard:
                self._gates[number] = gate
            self.send({"id": number, "event": "delay", "seconds": float(seconds)})
            gate.wait()

        if kind is None:  # as the grader's buyers call a step
            order = self.step.place(engine, order_request, context, sleep=sleep)
        else:
            order = self.step.place(engine, order_request, context, kind, sleep)
        if order is None:
            return None
        return {"id": getattr(order, "id", None)}

    def described(self, error: BaseException) -> dict:
        """As a lock host's, with the shop's error code (a refusal: ``sold_out``...) and
        the database's error number (1205: a row lock's wait timed out) where there are."""
        from shop.errors import ShopError
        # As a lock host says it, but its frames read without their source lines: a refusal
        # is an order's everyday answer here, and reading every frame's file the first time
        # cost a check more than its own sales.
        frames = [frame for frame in traceback.StackSummary.extract(
                      traceback.walk_tb(error.__traceback__), lookup_lines=False)
                  if Path(frame.filename).name == self.source]
        fields = {key: value[:MAX_MESSAGE] if isinstance(value, str) else value
                  for key in LOCK_ERROR_FIELDS
                  if isinstance(value := getattr(error, key, None), (str, int, float))
                  and not isinstance(value, bool)}
        said = {"type": type(error).__name__[:100], "message": str(error)[:MAX_MESSAGE],
                "fields": fields,
                "file": frames[-1].filename if frames else None,
                "line": frames[-1].lineno if frames else None}
        if isinstance(error, ShopError) and isinstance(error.code, str):
            said["code"] = error.code[:100]
        number = (getattr(getattr(error, "orig", None), "args", None) or (None,))[0]
        if isinstance(number, int) and not isinstance(number, bool):
            said["errno"] = number
        return said


def _warm_up() -> None:
    """What the first ``place`` would import and set up, done before the host says it is
    ready (the shop's own code, never the student's): a check's time is its steps', as it
    was with the step in the grader's warm process."""
    import importlib
    import shutil
    import tempfile
    from pathlib import Path
    for module in ("sqlalchemy.dialects.mysql.pymysql", "pymysql"):
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    from sqlalchemy import select, update
    from shop.store.db import make_engine
    from shop.store.models import Base, Order, Product
    folder = Path(tempfile.mkdtemp(prefix="lockshop-step-host-"))
    try:
        engine = make_engine(f"sqlite:///{folder / 'warm.db'}")
        Base.metadata.create_all(engine)
        with engine.begin() as db:  # the dialect, the mappers, the statements' compilers
            db.execute(select(Product).where(Product.id == 1)).first()
            db.execute(update(Product).where(Product.id == 1).values(stock=Product.stock))
            db.execute(select(Order.id).where(Order.product_id == 1)).first()
        engine.dispose()
        # A refusal's words, said once: the first said loads the message catalog (a tenth
        # of a second, which the first refused buyer of a check would wait otherwise).
        from shop.i18n import lazy_gettext
        str(lazy_gettext("product %(product)s is sold out", product=1))
    except Exception:  # noqa: BLE001 - a warm-up that fails leaves the first check slower
        pass
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lockshop.exercises.step_host")
    parser.add_argument("spec")
    parser.add_argument("--channel", type=int, required=True)
    args = parser.parse_args(argv)
    channel = socket.socket(fileno=args.channel)
    for name in ("locks", "lockshop", "shop", "sqlalchemy"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    from locks.custom import LockClassError, split_spec
    from shop.orders.custom_steps import FunctionStep, load_order_step
    try:
        step = load_order_step(args.spec)
    except LockClassError as error:
        channel.sendall(encode({"load_error": str(error)[:MAX_MESSAGE]}))
        return 2
    name = split_spec(args.spec)[1] or (step.function.__name__ if isinstance(step, FunctionStep)
                                        else type(step).__name__)
    _warm_up()
    channel.sendall(encode({"ready": {"class": name, "family": "order step"}}))
    StepHost(step, args.spec, channel).serve()
    os._exit(0)  # the channel closed: nothing is waited for (a hung step's threads)


if __name__ == "__main__":
    sys.exit(main())
