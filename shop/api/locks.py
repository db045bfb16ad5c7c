"""The locks, as the console's lock view reads them: what each product's lock looks
like in its backend now (keys, znodes, rows), and what this instance itself
remembers holding (``locks.hold_log``).

Both are read, not guessed: the backend says who holds and who waits; each
instance says when it believed it held. Put side by side, the holds of all
instances show two holders at once where a lock failed.
"""

from __future__ import annotations

import os
import time

from flask import Blueprint, jsonify, request
from sqlalchemy import select

import locks
from shop.api import schemas
from shop.api.spec import answers, spec
from shop.orders.order_path import lock_name
from shop.state import shop
from shop.store.models import Product

lock_view = Blueprint("locks", __name__, url_prefix="/api/locks")


@lock_view.get("")
@spec.validate(resp=answers(200, schemas.LockList), tags=["locks"])
def product_locks():
    """Each product's lock under the current strategy: holders and waiters as the lock's
    backend shows them, and the holds this instance has open on it."""
    state = shop()
    strategy = state.settings().strategy
    factory = state.strategies.lock_factory(strategy)
    with state.sessions.begin() as session:
        product_ids = session.execute(select(Product.id).order_by(Product.id)).scalars().all()
    open_holds = [h for h in locks.hold_log.since(time.time()) if h.released is None]
    answer = []
    for product_id in product_ids:
        name = lock_name(product_id)
        answer.append({"product_id": product_id, "lock": name, **_look(factory, name),
                       "held_here": [h.as_dict() for h in open_holds if h.lock == name]})
    figures = locks.metrics.snapshot().get(strategy, {})
    return jsonify({"instance": state.config.instance, "pid": os.getpid(),
                    "strategy": strategy, "herd_wakeups": figures.get("wakeups", 0),
                    "locks": answer})


@lock_view.get("/holds")
@spec.validate(query=schemas.HoldsQuery, resp=answers(200, schemas.Holds, 400, 422),
               tags=["locks"])
def holds():
    """This instance's holds: those open now and those that ended since ``since``."""
    since = request.context.query.since
    return jsonify({"instance": shop().config.instance, "pid": os.getpid(), "now": time.time(),
                    "forgotten": locks.hold_log.forgotten,
                    "holds": [h.as_dict() for h in locks.hold_log.since(since)]})


def _look(factory, name: str) -> dict:
    if factory is None:  # a transaction strategy: the database's own row locks
        return {"view": None}
    try:
        view = factory.look(name)
    except Exception as error:  # noqa: BLE001 - a backend down: say so, show the rest
        return {"view": None, "problem": f"{type(error).__name__}: {error}"}
    return {"view": None if view is None else
            {"where": view.where, "holders": view.holders, "waiting": view.waiting}}
