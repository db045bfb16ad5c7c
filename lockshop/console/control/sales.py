"""Live sales: Locust against every instance that is up, one sale at a time.

    POST /control/sales                 start a sale; 409 while another runs
    GET  /control/sales, /control/sales/<n>   the sales, sampled once a second
"""

from __future__ import annotations

from flask import Blueprint, jsonify

from lockshop.cluster.client import ShopClient, ShopClientError
from lockshop.console.control.web import acting_needs_the_token, json_object, the_control
from lockshop.console.live_sales import SaleRequest
from lockshop.front_door import Refused
from shop.i18n import lazy_gettext

sales = acting_needs_the_token(Blueprint("sales", __name__, url_prefix="/control/sales"))


@sales.post("")
def start_sale():
    body = json_object("strategy, buyers, seconds, business_delay_ms, product")
    try:
        sale_request = SaleRequest(**body)
    except TypeError as error:
        raise Refused(400, lazy_gettext("not a sale: %(error)s", error=error)) from None
    control = the_control()
    check_strategy(control.cluster.urls[0], sale_request.strategy)
    sale = control.sales.start(sale_request)
    control.changed()  # the state names the running sale from now on
    return jsonify(sale.as_dict()), 202


@sales.get("")
def sale_list():
    return jsonify({"sales": [sale.as_dict() for sale in the_control().sales.runs()]})


@sales.get("/<int:number>")
def sale(number: int):
    return jsonify(the_control().sales.run(number).as_dict())


def check_strategy(shop_url: str, name: str) -> None:
    """Refuse a strategy the shop does not know, or cannot use now, with a 422."""
    try:
        listed = ShopClient(shop_url, timeout=5).get("/api/strategies")
    except ShopClientError as error:
        raise Refused(503, lazy_gettext("the shop does not answer: %(error)s",
                                        error=error)) from None
    strategy = next((s for s in listed["strategies"] if s["name"] == name), None)
    if strategy is None:
        raise Refused(422, lazy_gettext("no strategy named %(name)r", name=name))
    if not strategy["available"]:
        raise Refused(422, lazy_gettext("strategy %(name)r cannot run here now (it needs "
                                        "%(needs)s)", name=name,
                                        needs=", ".join(strategy["requires"])))
