"""The sale, for an order step: three shop instances sell with the student's step.

As ``sale`` does for a lock: buyers arrive together at three instances (separate
processes), for the units of an item and the seats of a ticket, and the shop's
audit, read from the database, is the verdict. Here the student's order step is
the strategy (``Config.extra_steps``), and the database is the one the exercise
is graded on (``Grading.database_url``): InnoDB's row locks for ``FOR UPDATE``.
"""

from __future__ import annotations

from lockshop.exercises.checks.sale import (
    BUYERS,
    INSTANCES,
    SEATS,
    STOCK,
    sell_on_three,
)
from lockshop.exercises.grading import Check, Grading
from shop.config import Config
from shop.i18n import _, lazy_gettext


def step_sale(grading: Grading) -> tuple[str, bool]:
    config = Config(database_url=grading.database_url, lock_timeout_ms=30_000,
                    extra_steps=(f"exercise={grading.spec}",))
    sold = sell_on_three(config, grading.runtime / "sale")
    observed = _("item: sold %(sold)s of %(stock)s, oversold %(oversold)s; ticket: "
                 "%(seats_sold)s seats of %(seats)s, double-booked %(double)s; answers "
                 "%(answers)s, in %(seconds).1f s",
                 sold=sold.item["sold"], stock=STOCK, oversold=sold.item["oversold"],
                 seats_sold=sold.ticket["sold"], seats=SEATS,
                 double=sold.ticket["double_booked_seats"], answers=sold.answers_seen(),
                 seconds=sold.seconds)
    return observed, sold.correct


#: Lesson C01: without a guard, concurrent read-check-writes sell more than the stock.
SALE = Check(
    "C01",
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
