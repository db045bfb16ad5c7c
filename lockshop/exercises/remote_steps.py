"""The grader's side of an order step's host: the student's step in a process of its own,
and a stub with the step's ``place`` that the checks call as they called the step.

``OrderStepHost`` is a ``remote_locks.LockHost`` that starts ``step_host`` instead (as the
student's user where the grader has one to give), and ``RemoteStep.place(database,
request, context, kind=None, sleep=...)`` reads as ``OrderStep.place``: it sends the
database's URL (the host makes its own engine: the grader's never leaves this process),
the request and the context as plain JSON, from the host thread named for the calling
buyer's thread. While the step runs, each call of its business delay comes back as a
``delay`` event for that request: the reader hands it to the buyer's thread, which
calls the ``sleep`` the check gave (a barrier of the grader's, ``buyers.Together``, or
a stop until the grader's go, ``checks.row_locks``), then sends ``go``. The step's
answer comes back as the order's id, or as the error it raised, made again here as the
class the checks know: the shop's refusals by their code (``SoldOut``...), a database's
``OperationalError`` with its error number (1205: a row lock's wait timed out), a TODO's
``NotImplementedError``, anything else a ``RaisedInHost`` named after it.

What the host says is believed as the step's own answer, no further: every verdict rests
on what the grader reads from the database (the audit, InnoDB's lock waits) and on its
own barriers. A delay's length is capped (``MAX_DELAY_SECONDS``), an event for no
request in flight is dropped, and nothing the host sends is run or unpickled.
"""

from __future__ import annotations

import math
import queue
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from lockshop.exercises.lock_protocol import MAX_MESSAGE, encode
from lockshop.exercises.remote_locks import HostGone, LockHost, raised, thread_name
from shop.errors import ShopError
from shop.i18n import _
from shop.orders.order_path import OrderContext, OrderRequest
from shop.store.models import ProductKind

#: The longest business delay the grader sleeps for the host (a step may ask for any).
MAX_DELAY_SECONDS = 10.0


class OrderStepHost(LockHost):
    """One student's order step in one process, and the buyers in flight to it. Its
    requests are a lock host's (their ids, their pending answers, their threads: the same
    bookkeeping, which ``place`` shares), but for the delay events a ``place`` hears while
    it waits."""

    MODULE = "lockshop.exercises.step_host"

    def __init__(self, spec: str, *, env: dict[str, str] | None = None) -> None:
        #: The ``place`` requests in flight -> their buyer's events, then None (answered).
        self._inboxes: dict[int, queue.SimpleQueue] = {}
        super().__init__(spec, env=env)

    def event(self, message: dict) -> None:
        number = message.get("id")
        if message.get("event") != "delay" or not isinstance(number, int):
            return
        with self._guard:
            inbox = self._inboxes.get(number)
        if inbox is not None:
            inbox.put(message)

    def place(self, url: str, request: OrderRequest, context: OrderContext,
              kind: ProductKind | None, sleep: Callable[[float], None]) -> object:
        """The step's ``place`` on the database at ``url``, in the calling thread's host
        thread; each of its delays slept here with ``sleep``. The placed order (its id),
        or the error the step raised, raised here."""
        number = next(self._ids)
        answer: Future = Future()
        inbox: queue.SimpleQueue = queue.SimpleQueue()
        thread = thread_name()
        with self._guard:
            self._pending[number] = answer
            self._inboxes[number] = inbox
            self._threads.add(thread)
        answer.add_done_callback(lambda _done: inbox.put(None))
        try:
            self._send({"id": number, "thread": thread, "op": "place", "database": url,
                        "request": asdict(request), "context": asdict(context),
                        "kind": None if kind is None else ProductKind(kind).value})
            while (event := inbox.get()) is not None:
                sleep(delay_seconds(event.get("seconds")))
                # On the host's reader, at once: the request's own thread is in the step.
                self._send({"thread": thread, "op": "go", "place": number})
        except OSError:
            with self._guard:
                self._pending.pop(number, None)
            raise HostGone(_("your lock's process is gone")) from None
        finally:
            with self._guard:
                self._inboxes.pop(number, None)
        message = answer.result()
        if "error" in message:
            raise step_error(message["error"])
        return placed(message.get("value"))

    def forget(self, url: str) -> None:
        """The host's engine of ``url`` disposed of (the check is done with its database)."""
        try:
            self.call("forget", database=url)
        except Exception:  # noqa: BLE001 - the grader's clean-up; the host may be gone
            pass

    def _send(self, message: dict) -> None:
        with self._writing:
            self._channel.sendall(encode(message))


class RemoteStep:
    """The student's order step, in its host: what a check calls (``OrderStep.place``)."""

    def __init__(self, host: OrderStepHost) -> None:
        self.host = host

    def place(self, database: Engine, request: OrderRequest, context: OrderContext,
              kind: ProductKind | None = None, sleep: Callable[[float], None] = time.sleep
              ) -> object:
        return self.host.place(url_of(database), request, context, kind, sleep)

    def forget(self, database: Engine) -> None:
        self.host.forget(url_of(database))

    def __repr__(self) -> str:
        return "<your order step in its process>"


def url_of(database: Engine) -> str:
    """The URL the host makes its own engine from: the grading database's, in full."""
    return database.url.render_as_string(hide_password=False)


def delay_seconds(seconds: object) -> float:
    """A delay the host asked for, as the grader sleeps it: a number in [0, MAX]."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) \
            or math.isnan(seconds):
        return 0.0
    return min(max(float(seconds), 0.0), MAX_DELAY_SECONDS)


@dataclass(frozen=True)
class PlacedOrder:
    """The order the step placed, as its host said it: its id alone (the checks read
    the rest from the database)."""

    id: int | str | None


def placed(value: object) -> PlacedOrder | None:
    if not isinstance(value, dict):
        return None
    order_id = value.get("id")
    if isinstance(order_id, str):
        return PlacedOrder(order_id[:100])
    return PlacedOrder(order_id if isinstance(order_id, int) and not isinstance(order_id, bool)
                       else None)


def _refusals() -> dict[str, type[ShopError]]:
    """The shop's errors by their code (the most derived first: ``SoldOut``, not its
    ``Conflict``)."""
    found: dict[str, type[ShopError]] = {}
    waiting = [ShopError]
    while waiting:
        kind = waiting.pop(0)
        found.setdefault(kind.code, kind)
        waiting.extend(kind.__subclasses__())
    return found


class _DriverError(Exception):
    """A database driver's error, as the host said it: (its number, its text)."""


class _OperationalErrorInHost(OperationalError):
    """A database's ``OperationalError`` the step raised in its host, with the driver's
    error number where the checks read it (``orig.args[0]``) and the host's text."""

    def __str__(self) -> str:
        return self.said


_OperationalErrorInHost.__name__ = "OperationalError"  # said as the step raised it


def step_error(said: object) -> BaseException:
    """The exception an order step's error answer stands for."""
    if not isinstance(said, dict):
        return raised(said)
    message = str(said.get("message", ""))[:MAX_MESSAGE]
    code, number = said.get("code"), said.get("errno")
    refusal = _refusals().get(code) if isinstance(code, str) else None
    if refusal is not None:
        error: BaseException = refusal(message)
    elif said.get("type") == "OperationalError" and isinstance(number, int) \
            and not isinstance(number, bool):
        error = _OperationalErrorInHost(None, None, _DriverError(number, message))
        error.said = message
    else:
        return raised({**said, "message": message})
    line = said.get("line")
    if isinstance(said.get("file"), str) and isinstance(line, int):
        error.where = (said["file"][:300], line)
    return error
