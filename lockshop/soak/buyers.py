"""The soak's buyers: each order has an Idempotency-Key, and every retry sends it again.

A buyer whose order timed out cannot know whether it was taken, so it does
what a careful client does: it asks again with the same key, on the next
instance (as a load balancer would send it), after a short pause. What each
buyer saw is tallied, and every order id the shop answered is kept by key:
one key answered with two ids is a duplicate order the client would see.
"""

from __future__ import annotations

import random
import secrets
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from lockshop.cluster.client import ShopClient

ATTEMPTS = 4  # the first and three retries
TIMEOUT_S = 4.0


@dataclass
class Tally:
    """Everything the buyers saw, shared by their threads."""

    #: Answers by kind: "201", "409", "503", "timeout", "500", ...
    answers: Counter = field(default_factory=Counter)
    #: Order ids the shop answered per key (one key, one order, or a duplicate).
    ids_by_key: dict[str, set[int]] = field(default_factory=dict)
    #: Keys given up on after every attempt failed (the buyer does not know).
    abandoned: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def saw(self, answer: str, key: str, order_id: int | None = None) -> None:
        with self.lock:
            self.answers[answer] += 1
            if order_id is not None:
                self.ids_by_key.setdefault(key, set()).add(order_id)

    @property
    def orders(self) -> int:
        """Orders the buyers were told were taken (one per key)."""
        return len(self.ids_by_key)

    @property
    def duplicates_seen(self) -> int:
        return sum(len(ids) - 1 for ids in self.ids_by_key.values())

    @property
    def server_errors(self) -> int:
        """5xx answers other than 503 (a 503 is the shop saying 'not now', honestly)."""
        return sum(n for answer, n in self.answers.items()
                   if answer.isdigit() and answer.startswith("5") and answer != "503")


def buy(urls: list[str], products: list[int], tally: Tally, stop: threading.Event,
        seed: int) -> None:
    """One buyer, until ``stop``: an order at a time, retried with its key."""
    rng = random.Random(seed)
    shops = [ShopClient(url, timeout=TIMEOUT_S) for url in urls]
    turn = seed
    while not stop.is_set():
        key, product = secrets.token_hex(12), rng.choice(products)
        for _ in range(ATTEMPTS):
            turn += 1
            status, order = shops[turn % len(shops)].place(product, key=key)
            answer = str(status) if isinstance(status, int) else "no answer"
            tally.saw(answer, key, order["id"] if order else None)
            if answer in ("201", "409") or answer.startswith("4"):
                break  # taken, sold out, or refused: asking again changes nothing
            time.sleep(rng.uniform(0.1, 0.4))  # then the next instance
        else:
            with tally.lock:
                tally.abandoned += 1

