"""The grader reads an order step's answers back from its host as untrusted text
(``lockshop.exercises.remote_steps``): a refusal is made again by its code, a database's
error by its number, anything else by its name, and nothing forged crashes the grader or
holds a buyer longer than a business delay may."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import OperationalError

from lockshop.exercises.checks.row_locks import _is_lock_wait_timeout
from lockshop.exercises.remote_locks import RaisedInHost
from lockshop.exercises.remote_steps import (
    MAX_DELAY_SECONDS,
    PlacedOrder,
    delay_seconds,
    placed,
    step_error,
)
from shop.errors import SeatTaken, ShopError, SoldOut


def test_a_refusal_is_the_shops_error_of_its_code():
    sold_out = step_error({"type": "SoldOut", "code": "sold_out", "message": "none left"})
    assert isinstance(sold_out, SoldOut) and sold_out.code == "sold_out"
    assert str(sold_out) == "none left"
    # By its code, whatever its class was called in the host.
    assert isinstance(step_error({"type": "Mine", "code": "seat_taken", "message": ""}),
                      SeatTaken)
    assert not isinstance(step_error({"type": "Mine", "code": "no such code"}), ShopError)


def test_a_database_error_keeps_its_number_where_the_checks_read_it():
    said = "(pymysql.err.OperationalError) (1205, 'Lock wait timeout exceeded')"
    error = step_error({"type": "OperationalError", "errno": 1205, "message": said,
                        "file": "mine.py", "line": 12})
    assert isinstance(error, OperationalError) and type(error).__name__ == "OperationalError"
    assert _is_lock_wait_timeout(error) and str(error) == said
    assert error.where == ("mine.py", 12)
    # A number that is no number: said by its name, no lock wait.
    forged = step_error({"type": "OperationalError", "errno": True, "message": said})
    assert isinstance(forged, RaisedInHost) and not isinstance(forged, OperationalError)


@pytest.mark.parametrize("answer", [None, "junk", [1], {"type": 7}, {"message": "x" * 10**6}])
def test_a_forged_error_is_raised_in_the_host_and_capped(answer):
    error = step_error(answer)
    assert isinstance(error, BaseException) and len(str(error)) <= 2000


def test_an_order_is_its_id_alone():
    assert placed({"id": 12, "status": "paid"}) == PlacedOrder(12)
    assert placed(None) is None and placed([12]) is None
    assert placed({"id": True}) == PlacedOrder(None)
    assert placed({"id": "x" * 1000}).id == "x" * 100


@pytest.mark.parametrize(("asked", "slept"), [
    (0.05, 0.05), (-1, 0.0), (float("nan"), 0.0), (float("inf"), MAX_DELAY_SECONDS),
    (1e9, MAX_DELAY_SECONDS), ("1", 0.0), (True, 0.0), (None, 0.0)])
def test_a_delay_is_slept_as_a_number_within_its_cap(asked, slept):
    assert delay_seconds(asked) == slept
