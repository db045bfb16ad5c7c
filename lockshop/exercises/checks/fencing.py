"""C15 on a student's lock: a holder paused past its lease writes late, and the
shop's fenced write refuses it.

The holder is a process of its own, stopped with SIGSTOP (as a long GC pause
or a swapped-out process would be): its watchdog, if it has one, stops with
it, so the lease runs out. Another owner takes the lock and writes; then the
paused holder resumes and its write comes late, with the fencing token its lock
gave it and no check of its lock in between (the pause may come after any
check). The grader makes that write itself, through the shop's fenced write:
only the fencing token can refuse it, and the refusal is the shop's to say.
"""

from __future__ import annotations

from lockshop.cluster.holder import held, late_write, token_of
from lockshop.exercises.grading import Grading
from shop.app import create_schema
from shop.i18n import _
from shop.orders.order_path import write_stock
from shop.store.db import make_engine, make_sessions
from shop.store.models import ProductKind
from shop.store.products import ProductSpec, reset_products


def paused_holder_writes_late(grading: Grading) -> tuple[str, bool]:
    name = grading.fresh_name("fenced")
    database_url = f"sqlite:///{grading.runtime / (name + '.db')}"
    engine = make_engine(database_url)
    create_schema(engine)
    reset_products(make_sessions(engine), (ProductSpec("x", "Item", ProductKind.ITEM, stock=5),))
    holder = grading.start_holder(name)
    try:
        said = grading.first_line(holder)
        if not held(said):
            return _("A did not get the lock: %(said)s", said=said), False
        a_token = token_of(said)
        if a_token == "-" or not a_token.isdigit():
            return _("A's lock has no fencing token (fencing_token is None)"), False
        holder.pause()
        gone = grading.until(lambda: not _still_there(grading, name),
                             seconds=4 * grading.lease_ms / 1000)
        if not gone:
            return _("A's lock outlived its lease while A was stopped"), False
        b = grading.take(grading.factory(lease_ms=5000), name)
        if b is None:
            return _("B could not take the lock after A's lease ran out"), False
        b_token = b.fencing_token
        with engine.begin() as db:
            write_stock(db, 1, 4, b_token)
        holder.resume()
        # A's late write, with the token A's lock gave it: the grader writes it through
        # the shop's fenced write, so that the verdict is the shop's, not A's process's.
        a_wrote = late_write(database_url, int(a_token))
        grading.in_thread(grading.release_quietly, b)
    finally:
        grading.stop_holder(holder)
        engine.dispose()
    observed = _("A's fencing token %(a)s, B's %(b)s; B wrote; A's late write was %(late)s",
                 a=a_token, b=b_token,
                 late={"refused": _("refused"), "written": _("written")}.get(a_wrote, a_wrote))
    return observed, a_wrote == "refused" and b_token is not None and int(b_token) > int(a_token)


def _still_there(grading: Grading, name: str) -> bool:
    return bool(grading.redis().exists(grading.key_of(name)))

