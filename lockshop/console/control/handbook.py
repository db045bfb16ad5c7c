"""The handbook, so that the console can link to it (built on first use if need be).

    GET  /handbook/...

Reading only: open to anyone.
"""

from __future__ import annotations

from flask import Blueprint, send_from_directory

from lockshop.console.control.web import the_control
from lockshop.front_door import Refused
from shop.i18n import lazy_gettext

handbook = Blueprint("handbook", __name__, url_prefix="/handbook")


@handbook.get("/")
@handbook.get("/<path:page>")
def handbook_page(page: str = "index.html"):
    folder = the_control().handbook.folder()
    if folder is None:
        raise Refused(404, lazy_gettext("the handbook is not built here: ./run docs build"))
    if page.endswith("/"):
        page += "index.html"
    return send_from_directory(folder, page)
