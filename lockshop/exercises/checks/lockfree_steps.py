"""The lock-free order steps' lessons, forced on the student's step by the grader's buyers.

Each check sells from a fresh shop database of its own (``buyers.Floor``) and
holds every buyer in its business delay until all have read (``buyers.Together``):
the window a wrong step leaves open is open every time, not by luck. The verdict
is the shop's audit of that database: units sold against the stock taken, and
orders against keys.

* C07, the version column (exercise 19): two buyers read the same version;
  one write must change no row, and that buyer must read again, not sell on
  what it read, and not give up while there is stock.
* C25, the conditional UPDATE (exercise 20): buyers of the last unit and of
  one named seat; the WHERE clause must refuse all but one.
* C44, the retried order (exercise 21): an order's answer is lost and the
  buyer retries with the same key, after the first attempt committed and
  while it is still at work; one key must make one order.
"""

from __future__ import annotations

from lockshop.exercises.buyers import Floor, Outcome, item, ticket
from lockshop.exercises.grading import Check, Grading
from shop.i18n import _, lazy_gettext
from shop.orders.order_path import OrderRequest


def _answers(outcomes: list[Outcome]) -> str:
    return ", ".join(outcome.said() for outcome in outcomes)


def _never_met() -> str:
    return _("the buyers never met in the business delay: does your step still call "
             "business_delay(context, sleep) between its read and its write?")


# --- C07: the version column -------------------------------------------------------------

def conflict_retried(grading: Grading) -> tuple[str, bool]:
    with Floor(grading, (item(5),)) as floor:
        outcomes, met = floor.together([OrderRequest(1), OrderRequest(1)])
        product, version = floor.audit(), floor.version()
    observed = _("sold %(sold)s, %(left)s of 5 left, lost updates %(lost)s, version "
                 "%(version)s, retries %(retries)s; answers: %(answers)s", sold=product.sold,
                 left=product.remaining, lost=product.lost_updates, version=version,
                 retries=product.retries, answers=_answers(outcomes))
    if not met:
        return f"{observed}; {_never_met()}", False
    both_sold = all(outcome.order_id is not None for outcome in outcomes)
    # The version counts the writes that landed: one per sale.
    return observed, both_sold and (product.sold, product.remaining, product.lost_updates,
                                    version) == (2, 3, 0, 2)


def last_unit_not_oversold(grading: Grading) -> tuple[str, bool]:
    with Floor(grading, (item(1),)) as floor:
        outcomes, met = floor.together([OrderRequest(1), OrderRequest(1)])
        product = floor.audit()
    observed = _("sold %(sold)s of 1, oversold %(oversold)s, lost updates %(lost)s; "
                 "answers: %(answers)s", sold=product.sold, oversold=product.oversold,
                 lost=product.lost_updates, answers=_answers(outcomes))
    if not met:
        return f"{observed}; {_never_met()}", False
    answers = sorted(outcome.refused or "order" for outcome in outcomes)
    return observed, answers == ["order", "sold_out"] and \
        (product.sold, product.oversold, product.lost_updates) == (1, 0, 0)


OPTIMISTIC = (
    Check("C07",
          lazy_gettext("2 buyers, 5 in stock, both held in the business delay until both have "
                       "read the same version; then both write"),
          lazy_gettext("one write changes no row and that buyer reads again: both sold, 3 "
                       "left, no lost update, the version bumped once per sale (2)"),
          lazy_gettext("A conflict is a retry: write only WHERE version = the one you read, "
                       "bumping it in the same UPDATE; when that changed no row (rowcount 0), "
                       "sell nothing, wait a moment and read version and stock again."),
          conflict_retried),
    Check("C07",
          lazy_gettext("2 buyers of the last unit, both held in the business delay until both "
                       "have read it"),
          lazy_gettext("one sold; the other reads again, finds none and is refused as sold "
                       "out: nothing oversold"),
          lazy_gettext("The loser of the race must read again before it decides: after a "
                       "conflict, go round the loop (read, check, write), and never write a "
                       "stock computed from the old read."),
          last_unit_not_oversold),
)


# --- C25: the conditional UPDATE ---------------------------------------------------------

def last_unit_taken_once(grading: Grading) -> tuple[str, bool]:
    with Floor(grading, (item(1),)) as floor:
        outcomes, met = floor.together([OrderRequest(1)] * 3)
        product = floor.audit()
    observed = _("sold %(sold)s of 1, %(left)s left, oversold %(oversold)s; answers: "
                 "%(answers)s", sold=product.sold, left=product.remaining,
                 oversold=product.oversold, answers=_answers(outcomes))
    if not met:
        return f"{observed}; {_never_met()}", False
    answers = sorted(outcome.refused or "order" for outcome in outcomes)
    return observed, answers == ["order", "sold_out", "sold_out"] and \
        (product.sold, product.remaining, product.oversold) == (1, 0, 0)


def named_seat_taken_once(grading: Grading) -> tuple[str, bool]:
    with Floor(grading, (ticket(3),)) as floor:
        outcomes, met = floor.together([OrderRequest(1, seat="A1")] * 3)
        product = floor.audit()
    observed = _("orders %(orders)s, seats double-booked %(double)s, %(left)s of 3 seats "
                 "left; answers: %(answers)s", orders=product.orders,
                 double=product.double_booked_seats, left=product.remaining,
                 answers=_answers(outcomes))
    if not met:
        return f"{observed}; {_never_met()}", False
    answers = sorted(outcome.refused or "order" for outcome in outcomes)
    return observed, answers == ["order", "seat_taken", "seat_taken"] and \
        (product.orders, product.double_booked_seats, product.remaining) == (1, 0, 2)


ATOMIC = (
    Check("C25",
          lazy_gettext("3 buyers of the last unit, all past the business delay before any "
                       "writes"),
          lazy_gettext("the database lets one UPDATE take it: 1 sold, 2 refused as sold out, "
                       "0 left"),
          lazy_gettext("Put the check in the write: UPDATE products SET stock = stock - "
                       ":quantity WHERE id = :product AND stock >= :quantity, and sell only "
                       "when it changed one row. Do not read the stock first and decide on it."),
          last_unit_taken_once),
    Check("C25",
          lazy_gettext("3 buyers of the same seat, all past the business delay before any "
                       "writes"),
          lazy_gettext("one order gets the seat, the other 2 are refused as taken: none "
                       "double-booked"),
          lazy_gettext("Claim a seat the same way: UPDATE seats SET order_id = :order WHERE "
                       "... AND order_id IS NULL, and take it only when one row changed; a "
                       "claim that writes whatever is there lets every buyer have it."),
          named_seat_taken_once),
)


# --- C44: the retried order --------------------------------------------------------------

def lost_answer_retried(grading: Grading) -> tuple[str, bool]:
    key = "grader-lost-answer"
    with Floor(grading, (item(1),)) as floor:
        first = floor.buy(OrderRequest(1, key=key))  # its answer is lost: the buyer saw nothing
        retry = floor.buy(OrderRequest(1, key=key))
        product = floor.audit()
    observed = _("first attempt: %(first)s (its answer lost); the retry: %(retry)s; the shop "
                 "has %(orders)s order(s), sold %(sold)s of 1",
                 first=first.said(), retry=retry.said(), orders=product.orders,
                 sold=product.sold)
    return observed, first.order_id is not None and retry.order_id == first.order_id \
        and (product.orders, product.sold) == (1, 1)


def attempts_at_once(grading: Grading) -> tuple[str, bool]:
    key = "grader-at-once"
    with Floor(grading, (item(5),)) as floor:
        outcomes, met = floor.together([OrderRequest(1, key=key)] * 2)
        product = floor.audit()
    observed = _("answers: %(answers)s; the shop has %(orders)s order(s), sold %(sold)s",
                 answers=_answers(outcomes), orders=product.orders, sold=product.sold)
    if not met:
        return f"{observed}; {_never_met()}", False
    ids = {outcome.order_id for outcome in outcomes}
    return observed, len(ids) == 1 and None not in ids and \
        (product.orders, product.sold, product.lost_updates) == (1, 1, 0)


IDEMPOTENT = (
    Check("C44",
          lazy_gettext("an order for the last unit commits and its answer is lost; the buyer "
                       "retries it with the same key"),
          lazy_gettext("the retry answers the first order (the same id), not 'sold out': one "
                       "order"),
          lazy_gettext("Before selling, look the key up: an order it made already is the "
                       "answer, and nothing new is sold. That needs the key written beside its "
                       "order (INSERT INTO order_keys) in the order's own transaction."),
          lost_answer_retried),
    Check("C44",
          lazy_gettext("2 attempts of one order with the same key (the first's answer lost "
                       "while it works), both held in the business delay until both are there"),
          lazy_gettext("one commits, the other's key insert fails and it answers the first "
                       "order: one order, 1 sold"),
          lazy_gettext("Write the key in the same transaction as the order, so that the "
                       "second order with it cannot commit (the key is the primary key); when "
                       "your insert fails (IntegrityError), answer with the order of the key, "
                       "read afresh."),
          attempts_at_once),
)
