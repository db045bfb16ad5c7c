"""The room's page: what a student's browser opens, served by ``lockshop up``'s control.

    GET /room/                     the page: join, the exercises, an editor, Check, the board
    GET /room/static/...           its script and style, and the editor (CodeMirror, vendored)
    GET /room/i18n.js              the shop's script that gives the page's scripts their words
    GET /room/dom.js               the shop's script that builds elements, strings as text

The page only draws and sends: everything it does goes through the room's JSON API
under ``/room/api`` (``lockshop/room/api.py``), which a script can use as well. A
student needs a browser and nothing else, so every script and style comes from here,
never from a CDN: a workshop room's laptops may reach only the instructor's machine.

The app that serves it must speak languages (``shop.i18n.web.init_app``, as the
control does): the page reads the browser's language, or the one its 中文/English
switch chose, and its scripts load the catalog from ``/i18n/<language>.json``.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, render_template, send_from_directory, url_for

import shop

#: The shop's scripts every page uses, the console's too: the catalog loader
#: (``i18n._()``) and ``element()``, which shows strings as text.
SHOP_SCRIPTS = Path(shop.__file__).resolve().parent / "web" / "static"
#: Where the page lives; the API is under it, at ``api``.
PREFIX = "/room"


page = Blueprint("room_page", __name__, url_prefix=PREFIX, template_folder="templates",
                 static_folder="static", static_url_path="/static")


@page.get("/")
def room():
    """The student's page: join with the room code, then write and check."""
    return render_template("room/page.html", api=url_for("room_page.room") + "api")


@page.get("/i18n.js")
def i18n_script():
    return send_from_directory(SHOP_SCRIPTS, "i18n.js", mimetype="text/javascript")


@page.get("/dom.js")
def dom_script():
    return send_from_directory(SHOP_SCRIPTS, "dom.js", mimetype="text/javascript")
