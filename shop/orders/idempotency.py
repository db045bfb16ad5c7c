"""Orders a retry cannot duplicate: the ``Idempotency-Key``.

A buyer whose order timed out cannot know whether it was taken: the shop may
have committed it a moment after the buyer gave up. Retrying blindly makes a
second order; not retrying may lose the first. The answer of real shop APIs
(Stripe's, and the IETF draft that names the header) is a key the client makes
once per order and sends with every attempt of it:

* the attempt that commits writes the key beside its order, in the order's
  own transaction (``order_path.insert_order``). The key is the table's primary
  key, so a second order with it cannot commit: not on another instance, not
  under another strategy, not even under one that oversells;
* an attempt whose key is known gets that order back, replayed, without
  running the order path again;
* an attempt that fails (sold out, lock timeout, or its key's insert lost to
  a concurrent attempt) looks once more: if an attempt with its key committed
  meanwhile, that order is its answer;
* the same key with another request (product, quantity or seat) is refused
  (422): the client has a bug, and guessing which one it meant would hide it.

A refused order leaves no key, so its retry runs again: that is safe, since
nothing was sold. Keys are kept for ``KEEP_KEYS``; a retry after that is a new
order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Engine, bindparam, delete, select
from sqlalchemy.orm import Session

from shop.errors import BadRequest, Unprocessable
from shop.i18n import lazy_gettext
from shop.orders.order_path import OrderRequest
from shop.store.models import Order, OrderKey, PlacedOrder, utcnow

#: How long a key is remembered: far longer than any client retries one order.
KEEP_KEYS = timedelta(hours=24)
#: Keys are printable ASCII without spaces, as HTTP header values travel safely.
MAX_KEY_LENGTH = 255


class KeyReused(Unprocessable):
    code = "idempotency_key_reused"


@dataclass(frozen=True)
class Placed:
    order: PlacedOrder | Order
    #: True when the key had made this order already: nothing new was sold.
    replayed: bool = False


def checked_key(value: str | None) -> str | None:
    """The header's value, or None when absent; 400 for one that cannot be a key."""
    if value is None:
        return None
    if not 1 <= len(value) <= MAX_KEY_LENGTH or not all("!" <= c <= "~" for c in value):
        raise BadRequest(lazy_gettext("Idempotency-Key must be 1 to %(max)s printable ASCII "
                                      "characters without spaces", max=MAX_KEY_LENGTH))
    return value


def place_once(place: Callable[[OrderRequest], PlacedOrder], database: Engine,
               request: OrderRequest) -> Placed:
    """``place(request)`` unless its key made an order already; then that order."""
    if request.key is None:
        return Placed(place(request))
    first = keyed_order(database, request)
    if first is not None:
        return Placed(first, replayed=True)
    try:
        return Placed(place(request))
    except Exception:
        # Refused, timed out, or beaten to the key by a concurrent attempt: if an
        # attempt with this key committed meanwhile, its order is the answer.
        first = keyed_order(database, request)
        if first is None:
            raise
        return Placed(first, replayed=True)


KEYED_ORDER = (select(Order, OrderKey.request, OrderKey.created_at)
               .join(OrderKey, OrderKey.order_id == Order.id)
               .where(OrderKey.key == bindparam("key")))
FORGET_KEY = delete(OrderKey).where(OrderKey.key == bindparam("key"),
                                    OrderKey.created_at < bindparam("since"))


def keyed_order(database: Engine, request: OrderRequest) -> Order | None:
    """The order ``request.key`` made within ``KEEP_KEYS``, or None; 422 if it asked otherwise."""
    with Session(database) as session:
        row = session.execute(KEYED_ORDER, {"key": request.key}).first()
    if row is None:
        return None
    order, asked, created_at = row
    since = utcnow() - KEEP_KEYS
    if created_at < since:  # kept long enough: this key is free for a new order
        with database.begin() as db:
            db.execute(FORGET_KEY, {"key": request.key, "since": since})
        return None
    if asked != request.asked:
        raise KeyReused(lazy_gettext(
            "Idempotency-Key %(key)r was sent with another order (%(asked)s, as "
            "product/quantity/seat); this one asks %(now)s",
            key=request.key, asked=asked, now=request.asked), order_id=order.id)
    return order


class KeySweeper:
    """Deletes keys older than ``KEEP_KEYS``, at most once per ``every`` seconds per process:
    the lookup already ignores them, this only keeps the table small."""

    def __init__(self, every: float = 60.0) -> None:
        self._every = every
        self._next = 0.0
        self._lock = threading.Lock()

    def sweep_if_due(self, database: Engine) -> int:
        with self._lock:
            if time.monotonic() < self._next:
                return 0
            self._next = time.monotonic() + self._every
        with database.begin() as db:
            return db.execute(delete(OrderKey).where(
                OrderKey.created_at < utcnow() - KEEP_KEYS)).rowcount
