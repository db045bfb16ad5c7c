"""A fair-lock waiter whose session expires while it is queued must queue again.

It used to go on watching its old predecessor and, when that holder handed the
lock over, take the lock with no node at all, beside the rightful next waiter:
two holders. Found while rewriting zk_fair as its recipe; this stages it.
"""

from __future__ import annotations

import threading

from helpers import wait_for
from lockshop.cluster.zookeeper_sessions import end_session


def test_a_waiter_whose_session_expired_queues_again(zookeeper, open_lock_factory):
    a, b, c = (open_lock_factory("zk_fair", lease_ms=2000) for _ in range(3))
    holder = a.lock("product:1")
    assert holder.acquire()
    w = b.lock("product:1", timeout=30)
    w_result: list[bool] = []
    waiting = threading.Thread(target=lambda: w_result.append(w.acquire()), daemon=True)
    waiting.start()
    wait_for(lambda: len(a.look("product:1").waiting) == 1, message="W to queue")
    session, password = b.client.client_id
    end_session(session, password, zookeeper.address)
    wait_for(lambda: w.node is None or not a.look("product:1").waiting, timeout=15,
             message="W's node to go with its session")
    x = c.lock("product:1", timeout=30)
    x_result: list[bool] = []
    queued = threading.Thread(target=lambda: x_result.append(x.acquire()), daemon=True)
    queued.start()
    wait_for(lambda: a.look("product:1").waiting, message="X to queue")
    holder.release()
    # Whoever is served first holds; the other must still be waiting while it does.
    wait_for(lambda: w_result or x_result, timeout=15, message="W or X to be served")
    first = w if w_result else x
    second, second_result = (x, x_result) if first is w else (w, w_result)
    assert not second_result, "two holders at once: the expired waiter walked in"
    first.release()
    wait_for(lambda: second_result, timeout=15, message="the second to be served")
    assert second_result == [True]
    second.release()
