"""The control's HTTP plumbing, shared by every blueprint: the app, its CORS headers, and
how a blueprint reaches the control's parts. The refusals as JSON, the admin token, the
capped bodies and the JSON reader are lockshop's front door (``lockshop.front_door``),
which the room's API stands on too."""

from __future__ import annotations

from flask import Blueprint, Flask, Response, current_app, request
from werkzeug.exceptions import HTTPException

from lockshop import front_door
from lockshop.console.control.limits import cap_of
from lockshop.console.control.owner import Control
from lockshop.front_door import Refused
from shop.i18n.web import init_app as init_languages

#: Headers the console's page (on another origin, an instance's) may send.
ALLOWED_HEADERS = "Authorization, Content-Type, Accept-Language, X-Room-Code, X-Admin-Token"


def the_control() -> Control:
    """The control this request is answered by."""
    return current_app.extensions["control"]


def json_object(fields: str) -> dict:
    """The request's JSON body (capped at the door), which must be an object (400 naming
    ``fields`` if not)."""
    return front_door.json_object(fields=fields)


def acting_needs_the_token(blueprint: Blueprint) -> Blueprint:
    """Declare ``blueprint``'s rule: anyone may read (GET), acting needs the admin token
    (``Authorization: Bearer <token>``, or ``X-Admin-Token``), as the shop's admin API
    does. Without a token configured, anyone may act (``up`` says so when it starts)."""
    blueprint.before_request(_require_the_token_to_act)
    return blueprint


def _require_the_token_to_act() -> None:
    if request.method != "GET":
        front_door.require_admin_token()


def control_app(control: Control, blueprints: list[Blueprint]) -> Flask:
    """The control's Flask app, answering for ``control`` with ``blueprints``."""
    app = Flask("lockshop.console.control", static_folder=None)
    app.extensions["control"] = control
    # The one owner of the app's token: the room's API, served on it, reads it too.
    app.extensions[front_door.ADMIN_TOKEN] = control.config.admin_token
    # The console's lab list and texts in the language of the page that asks.
    init_languages(app)
    app.json.sort_keys = False
    app.wsgi_app = front_door.CappedBodies(app.wsgi_app, cap_of)
    app.before_request(front_door.refuse_a_body_over_its_cap)
    app.before_request(_answer_a_preflight)
    app.after_request(_allow_the_console)
    app.register_error_handler(Refused, front_door.answer_refusal)
    app.register_error_handler(HTTPException, front_door.answer_http_error)
    for blueprint in blueprints:
        app.register_blueprint(blueprint)
    return app


def _answer_a_preflight() -> Response | None:
    if request.method == "OPTIONS":
        return Response(status=204)  # a CORS preflight: the headers below say it all
    return None


def _allow_the_console(response: Response) -> Response:
    response.headers["Access-Control-Allow-Origin"] = "*"
    response.headers["Access-Control-Allow-Headers"] = ALLOWED_HEADERS
    # DELETE: the console's instructor removes a name through the room's API.
    response.headers["Access-Control-Allow-Methods"] = "GET, POST, DELETE"
    return response
