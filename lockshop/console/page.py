"""The console's page, which each instance serves beside the shop's API.

The page only draws: it reads the instance's API (same origin, no CORS), and
asks the launcher's control, at the address the launcher gave the instance,
for everything only the launcher can do. Without a control (an instance not
started by ``lockshop up``) it reads and buys, and its instructor's buttons
are gone.
"""

from __future__ import annotations

from flask import Blueprint, Flask, current_app, render_template, url_for

from shop.i18n import N_, _
from shop.state import shop

#: Where the launcher tells an instance its control answers.
CONTROL_URL_VARIABLE = "LOCKSHOP_CONTROL_URL"

#: A strategy's family (``Strategy.family``) as the strategy menu says it.
FAMILIES = {"none": N_("no lock"), "in-process": N_("one lock per process"),
            "database": N_("database"), "database-broken": N_("database, broken"),
            "lock-free": N_("no lock needed"), "redis": N_("Redis"),
            "redis-broken": N_("Redis, broken"), "zookeeper": N_("ZooKeeper"),
            "zookeeper-broken": N_("ZooKeeper, broken"), "custom": N_("your lock")}

page = Blueprint("console", __name__, url_prefix="/console", template_folder="templates",
                 static_folder="static", static_url_path="/static")


def mount(app: Flask, control_url: str | None) -> None:
    """Serve the console's page on ``app``, the shop, at ``/console``."""
    app.extensions["console"] = {"control_url": control_url or ""}
    app.register_blueprint(page)


@page.get("")
def console():
    """The workshop console: labs, a live sale, the lock view, faults and settings."""
    state = shop()
    return render_template("console.html", instance=state.config.instance,
                           control_url=current_app.extensions["console"]["control_url"],
                           token_required=bool(state.config.admin_token),
                           strategies=state.strategies.describe(), settings=state.settings(),
                           family=family)


def family(name: str) -> str:
    """A family's label in the reader's language (an unknown one as it is)."""
    return _(FAMILIES[name]) if name in FAMILIES else name


@page.app_context_processor
def console_link() -> dict:
    """The shop's pages link to the console when it is mounted (base.html's menu)."""
    return {"console_url": url_for("console.console")}
