"""The lock-free order steps in the shop: the sale, and buyers who retry a lost answer.

For exercises 19 and 20, the sale of ``step_sale`` (three shop instances sell with
the student's step, the audit judges), named for each exercise's lesson and with
its hint. For exercise 21, buyers whose answers are lost: each sends an order with
a key of its own to one instance and stops listening before the shop answers (the
shop is still in its business delay, and commits after); it retries the order with
the same key on the next instance at once, while the first attempt is still at
work, and once more on the third after that retry answered. The audit must count
one order per key.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from lockshop.exercises.checks import step_sale
from lockshop.exercises.checks.sale import INSTANCES, three_shops
from lockshop.exercises.grading import Check, Grading
from shop.config import Config
from shop.i18n import _, lazy_gettext

#: The retrying buyers, each with a key of its own, and the stock they buy from.
RETRYING = 3
RETRY_STOCK = 5
#: The shop's business delay, and how long a buyer listens before it gives up: the first
#: attempt is always still at work when the buyer retries, and always commits after.
RETRY_DELAY_MS = 600
PATIENCE_S = 0.2

SALE_C07 = replace(
    step_sale.SALE, lesson="C07",
    hint=lazy_gettext("Three processes share only the database: the version must be read with "
                      "the stock, the UPDATE must say WHERE version = the one read (and bump "
                      "it), and an UPDATE that changed no row must lead to a new read, never "
                      "to an order."))
SALE_C25 = replace(
    step_sale.SALE, lesson="C25",
    hint=lazy_gettext("Three processes share only the database: take the stock with one "
                      "UPDATE ... WHERE stock >= :quantity and a seat with one UPDATE ... "
                      "WHERE order_id IS NULL, and sell only when the UPDATE changed a row."))


def retried_orders(grading: Grading) -> tuple[str, bool]:
    config = Config(database_url=grading.database_url, lock_timeout_ms=30_000,
                    extra_steps=(f"exercise={grading.spec}",))
    products = [{"sku": "item", "stock": RETRY_STOCK}]
    with three_shops(config, grading.runtime / "retries", products,
                     delay_ms=RETRY_DELAY_MS) as (_cluster, shops):
        answers = _buyers_who_retry(shops)
        item = shops[0].audit()["products"][0]
    lost = [first for first, _retry, _again in answers]
    retried = [answer for _first, retry, again in answers for answer in (retry, again)]
    observed = _("%(buyers)s buyers, one key each: first answers %(lost)s; retries answered "
                 "%(retried)s; the shop has %(orders)s order(s), sold %(sold)s of "
                 "%(stock)s, oversold %(oversold)s",
                 buyers=RETRYING, lost=", ".join(sorted(set(map(str, lost)))),
                 retried=", ".join(sorted(set(map(str, retried)))), orders=item["orders"],
                 sold=item["sold"], stock=RETRY_STOCK, oversold=item["oversold"])
    passed = (all(answer == 201 for answer in retried) and item["orders"] == RETRYING
              and item["sold"] == RETRYING and item["lost_updates"] == 0)
    return observed, passed


def _buyers_who_retry(shops: list) -> list[tuple]:
    """Each buyer: an attempt whose answer it never hears, a retry at once on the next
    instance, and one more on the third once that retry answered."""
    start = threading.Barrier(RETRYING)
    answers: list[tuple] = []

    def buyer(n: int) -> None:
        key = f"grader-buyer-{n}"
        start.wait()
        first = shops[n % len(shops)].order(1, key=key, timeout=PATIENCE_S)
        retry = shops[(n + 1) % len(shops)].order(1, key=key)
        again = shops[(n + 2) % len(shops)].order(1, key=key)
        answers.append((first, retry, again))

    threads = [threading.Thread(target=buyer, args=(n,), daemon=True)
               for n in range(RETRYING)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return answers


RETRIED = Check(
    "C44",
    lazy_gettext("%(buyers)s buyers on %(instances)s shop instances, one key each: the answer "
                 "of each order is lost (the buyer stops listening after %(patience)s s, the "
                 "shop takes %(delay)s ms), and the buyer retries with the same key on another "
                 "instance at once, and again on a third",
                 buyers=RETRYING, instances=INSTANCES, patience=f"{PATIENCE_S:g}",
                 delay=RETRY_DELAY_MS),
    lazy_gettext("every retry answers 201 with the key's order: %(buyers)s orders, %(buyers)s "
                 "sold", buyers=RETRYING),
    lazy_gettext("The retry may run on another instance while the first attempt is still at "
                 "work: only the database can tell them apart. Write the key beside the order, "
                 "in the order's transaction, so that the second order with it cannot commit."),
    retried_orders, sale=True)
