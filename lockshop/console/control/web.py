"""The control's HTTP plumbing, shared by every blueprint: the app, its CORS headers,
refusals as JSON, the admin token, and how a blueprint reaches the control's parts."""

from __future__ import annotations

import hmac

from flask import Blueprint, Flask, Response, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from lockshop.console.control.limits import TOO_LARGE, CappedBodies
from lockshop.console.control.owner import Control
from lockshop.console.refusal import Refused
from shop.i18n import ENGLISH, language, lazy_gettext
from shop.i18n.web import init_app as init_languages

#: Headers the console's page (on another origin, an instance's) may send.
ALLOWED_HEADERS = "Authorization, Content-Type, Accept-Language, X-Room-Code"


def the_control() -> Control:
    """The control this request is answered by."""
    return current_app.extensions["control"]


def json_object(fields: str) -> dict:
    """The request's JSON body, which must be an object (400 naming ``fields`` if not)."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise Refused(400, lazy_gettext("send a JSON object: %(fields)s", fields=fields))
    return body


def acting_needs_the_token(blueprint: Blueprint) -> Blueprint:
    """Declare ``blueprint``'s rule: anyone may read (GET), acting needs the admin token
    (``Authorization: Bearer <token>``), as the shop's admin API does. Without a token
    configured, anyone may act (``up`` says so when it starts)."""
    blueprint.before_request(_require_the_token_to_act)
    return blueprint


def _require_the_token_to_act() -> None:
    token = the_control().config.admin_token
    if request.method == "GET" or not token:
        return
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(),
                                                             token.encode()):
        raise Refused(401, lazy_gettext("this needs the admin token (Authorization: Bearer "
                                        "<token>)"))


def control_app(control: Control, blueprints: list[Blueprint]) -> Flask:
    """The control's Flask app, answering for ``control`` with ``blueprints``."""
    app = Flask("lockshop.console.control", static_folder=None)
    app.extensions["control"] = control
    # The console's lab list and texts in the language of the page that asks.
    init_languages(app)
    app.json.sort_keys = False
    app.wsgi_app = CappedBodies(app.wsgi_app)
    app.before_request(_refuse_a_body_over_its_cap)
    app.before_request(_answer_a_preflight)
    app.after_request(_allow_the_console)
    app.register_error_handler(Refused, _refuse)
    app.register_error_handler(HTTPException, _http_error)
    for blueprint in blueprints:
        app.register_blueprint(blueprint)
    return app


def _refuse_a_body_over_its_cap() -> None:
    cap = request.environ.get(TOO_LARGE)
    if cap is not None:
        raise Refused(413, lazy_gettext("a request here is at most %(bytes)s bytes", bytes=cap))


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


def _refuse(refused: Refused):
    with language(ENGLISH):
        english = str(refused.message)
    return jsonify({"error": english, "message": str(refused.message)}), refused.status


def _http_error(error: HTTPException):
    return jsonify({"error": error.description, "message": error.description}), error.code
