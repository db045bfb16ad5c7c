"""The sale, for an order step: three shop instances sell with the student's step.

As ``sale`` does for a lock: buyers arrive together at three instances (separate
processes), for the units of an item and the seats of a ticket, and the shop's
audit, read from the database, is the verdict. Here the student's order step is
the strategy (``Config.extra_steps``), and the database is the one the exercise
is graded on (``Grading.database_url``): InnoDB's row locks for ``FOR UPDATE``.
"""

from __future__ import annotations

import time

from lockshop.exercises.checks.sale import (
    BUYERS,
    DELAY_MS,
    INSTANCES,
    SEATS,
    STOCK,
    TOKEN,
    _buyers_at_once,
)
from lockshop.exercises.grading import Check, Grading
from shop.config import Config
from shop.i18n import _, lazy_gettext


def step_sale(grading: Grading) -> tuple[str, bool]:
    from lockshop.cluster.client import ShopClient
    from lockshop.cluster.launcher import Cluster

    folder = grading.runtime / "sale"
    folder.mkdir(parents=True, exist_ok=True)
    config = Config(database_url=grading.database_url, lock_timeout_ms=30_000,
                    admin_token=TOKEN, extra_steps=(f"exercise={grading.spec}",),
                    strategy="exercise", job_interval_ms=0)
    with Cluster(config, instances=INSTANCES, runtime_dir=folder) as cluster:
        shops = [ShopClient(url, TOKEN, timeout=60) for url in cluster.urls]
        shops[0].reset([{"sku": "item", "stock": STOCK},
                        {"sku": "ticket", "kind": "ticket", "seats": SEATS}])
        shops[0].set_settings(strategy="exercise", business_delay_ms=DELAY_MS,
                              job_interval_ms=0)
        started = time.monotonic()
        answers = _buyers_at_once(shops)
        seconds = time.monotonic() - started
        audit = shops[0].audit()
    item, ticket = audit["products"]
    observed = _("item: sold %(sold)s of %(stock)s, oversold %(oversold)s; ticket: "
                 "%(seats_sold)s seats of %(seats)s, double-booked %(double)s; answers "
                 "%(answers)s, in %(seconds).1f s",
                 sold=item["sold"], stock=STOCK, oversold=item["oversold"],
                 seats_sold=ticket["sold"], seats=SEATS, double=ticket["double_booked_seats"],
                 answers=", ".join(sorted(set(map(str, answers)))), seconds=seconds)
    passed = (item["oversold"] == 0 and ticket["double_booked_seats"] == 0
              and ticket["oversold"] == 0 and item["sold"] == STOCK
              and ticket["sold"] == SEATS)
    return observed, passed


SALE = Check(
    "C03",
    lazy_gettext("%(buyers)s buyers at once on %(instances)s shop instances for %(stock)s units, "
                 "and %(buyers)s for %(seats)s seats, each order through your order step",
                 buyers=BUYERS, instances=INSTANCES, stock=STOCK, seats=SEATS),
    lazy_gettext("%(stock)s units and %(seats)s seats sold, none oversold or double-booked",
                 stock=STOCK, seats=SEATS),
    lazy_gettext("Three processes must exclude each other through the database: the row lock "
                 "must be taken by the read that decides (SELECT ... FOR UPDATE), in the same "
                 "transaction as the write and the order, and held until its commit. If orders "
                 "answered errors, read them: your SQL may not run on this database."),
    step_sale, sale=True)
