"""The staging of "the next thread is given a dead thread's id" holds whatever other
threads of the process did in between (CI once saw it fail 50 tries in a row: another
thread's stack, freed after the dead one's, was handed out every time)."""

from __future__ import annotations

import threading

from lockshop.cluster.thread_ids import given_a_dead_threads_id, in_a_thread


def test_a_later_thread_is_given_the_dead_id_though_another_thread_ended_after_it():
    leave = threading.Event()
    others = [threading.Thread(target=leave.wait) for _ in range(3)]
    for other in others:
        other.start()
    _result, dead_id = in_a_thread(lambda: None)
    leave.set()  # three stacks freed after the dead one's, on top of it
    for other in others:
        other.join()
    result, ident = in_a_thread(threading.get_ident, wanted_id=dead_id)
    assert ident == dead_id and result == dead_id


def test_each_later_thread_is_given_the_first_ones_id():
    first, later = given_a_dead_threads_id(threading.get_ident, later=10)
    assert later == [first] * 10


def test_an_error_in_the_action_is_raised_to_the_caller():
    def fails() -> None:
        raise ValueError("from the thread")

    try:
        in_a_thread(fails)
    except ValueError as error:
        assert str(error) == "from the thread"
    else:
        raise AssertionError("the thread's error was not raised")
