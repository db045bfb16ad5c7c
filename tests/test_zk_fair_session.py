"""A fair-lock waiter whose session expires while it is queued must queue again.

It used to go on watching its old predecessor and, when that holder handed the
lock over, take the lock with no node at all, beside the rightful next waiter:
two holders. Found while rewriting zk_fair as its recipe; the first test stages it.
The second stages the same walk-in by a narrower door, found under load: the
waiter's look answered just before its session ended, its watch set on the next.
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


def test_a_waiter_whose_session_ended_after_its_look_looks_again(zookeeper, open_lock_factory):
    """W looks (steps 1 to 4: the holder is ahead), then its session ends and kazoo opens
    the next; the holder leaves; W's watch (step 5, on the new session) finds the node
    ahead gone. That must send W back to look (step 2), where it finds its own node gone
    and queues again; it used to take the lock on the spot, with a node that no longer
    existed, beside whoever was rightfully next."""
    a, b, c = (open_lock_factory("zk_fair", lease_ms=2000) for _ in range(3))
    holder = a.lock("product:1")
    assert holder.acquire()
    w = b.lock("product:1", timeout=10)
    assert w._try_acquire() is False  # steps 1 to 4 on the old session: the holder is ahead
    old_session = b.session_id()
    end_session(*b.client.client_id, zookeeper.address)
    wait_for(lambda: b.session_id() not in (None, old_session), message="W's next session")
    holder.release()
    w._wait_for_release(5)  # 5. the node ahead is gone
    assert w._try_acquire() is False, "W took the lock with a node that went with its session"
    # W is in no queue now: X, asking next, gets the lock; W queues behind X, then holds.
    x = c.lock("product:1")
    assert x.acquire(blocking=False)
    assert w.acquire(blocking=False) is False
    x.release()
    assert w.acquire()
    w.ensure_held()
    w.release()
