"""The web UI: a self-refreshing dashboard, a buy page and a seat map.

Server-rendered; the only script re-fetches the dashboard panel every two
seconds. Errors are shown on the page with the same status the API would use.
"""

from __future__ import annotations

import hmac

from flask import Blueprint, redirect, render_template, request, url_for
from sqlalchemy import select

import locks
from locks import LockError
from shop.api.errors import lock_error_answer
from shop.api.products import seat_map
from shop.errors import NotFound, ShopError, Unauthorized
from shop.i18n import _, lazy_gettext
from shop.orders.order_path import OrderRequest
from shop.state import shop
from shop.store.audit import take_audit
from shop.store.models import Product, ProductKind

# The pages bring their own templates and styles: the app itself serves no static folder.
web = Blueprint("web", __name__, template_folder="templates", static_folder="static",
                static_url_path="/static")


@web.get("/")
def dashboard():
    """Show the dashboard."""
    # Only the full page lists the strategies: describing them probes every
    # backend, too slow for the panel that refreshes every two seconds.
    return render_template("dashboard.html", **_panel_data(),
                           strategies=shop().strategies.describe())


@web.get("/panel")
def panel():
    """Render the part of the dashboard that refreshes itself."""
    return render_template("_panel.html", **_panel_data())


@web.post("/settings")
def change_strategy():
    """Switch the cluster's strategy, and what guards the jobs, from the dashboard."""
    state = shop()
    token = state.config.admin_token
    if token and not hmac.compare_digest(request.form.get("token", "").encode(), token.encode()):
        raise Unauthorized(lazy_gettext("the admin token is wrong"))
    state.change_settings(strategy=request.form.get("strategy", ""),
                          job_guard=request.form.get("job_guard") or None)
    return redirect(url_for(".dashboard"), code=303)


@web.route("/products/<int:product_id>", methods=["GET", "POST"])
def buy(product_id: int):
    """Show a product to buy (a seat map for a ticket); POST buys it."""
    message, status = None, 200
    if request.method == "POST":
        message, status = _buy_from_form(product_id)
    with shop().sessions.begin() as session:
        product = session.get(Product, product_id)
        if product is None:
            raise NotFound(lazy_gettext("product %(product)s not found", product=product_id))
        seats = seat_map(session, product_id) if product.kind == ProductKind.TICKET.value else []
    return render_template("buy.html", product=product, seats=seats, message=message,
                           instance=shop().config.instance), status


def _buy_from_form(product_id: int) -> tuple[dict, int]:
    try:
        quantity = int(request.form.get("quantity", "1"))
    except ValueError:
        return {"ok": False, "text": _("quantity must be a whole number")}, 400
    seat = request.form.get("seat") or None
    try:
        order = shop().place_order(OrderRequest(product_id, quantity, seat))
    except ShopError as error:
        return {"ok": False, "text": error.message}, error.status
    except LockError as error:
        return {"ok": False, "text": lock_error_answer(error)[1]}, 503
    if order.seat:
        return {"ok": True, "text": _("order %(order)s placed (seat %(seat)s) by %(instance)s",
                                      order=order.id, seat=order.seat,
                                      instance=order.instance)}, 201
    return {"ok": True, "text": _("order %(order)s placed by %(instance)s", order=order.id,
                                  instance=order.instance)}, 201


def _panel_data() -> dict:
    state = shop()
    with state.sessions.begin() as session:
        names = dict(session.execute(select(Product.id, Product.name)).all())
    return {"audit": take_audit(state.sessions), "names": names, "settings": state.settings(),
            "instance": state.config.instance,
            "token_required": bool(state.config.admin_token), "locks": lock_rows()}


def lock_rows() -> list[dict]:
    """This instance's lock metrics per strategy, in milliseconds, for the panel."""
    rows = []
    for strategy, m in locks.metrics.snapshot().items():
        wait, hold = m["wait_seconds"], m["hold_seconds"]
        rows.append({"strategy": strategy, "acquisitions": m["acquisitions"],
                     "timeouts": m["timeouts"], "lost": m["losses"], "renewals": m["renewals"],
                     "wakeups": m["wakeups"],
                     "wait_mean_ms": 1000 * wait["sum"] / wait["count"] if wait["count"] else 0,
                     "wait_max_ms": 1000 * wait["max"],
                     "hold_mean_ms": 1000 * hold["sum"] / hold["count"] if hold["count"] else 0})
    return rows
