"""Languages on the web: which one a request reads, and the catalog for JavaScript.

A request's language is, in this order: ``?lang=`` (remembered in the ``lang``
cookie, so a page's language switch sticks), the ``lang`` cookie, then the
browser's Accept-Language (the first language, by preference, that has a
catalog). ``zh``, ``zh-CN``, ``zh_CN`` and ``zh-Hans`` all reach the Chinese
catalog; anything else is English.

Flask-Babel keeps the request's locale (``flask_babel.get_locale()``); the
templates' ``_``/``gettext``/``ngettext`` and ``{% trans %}`` are
``shop.i18n``'s, so a page and the code behind it read one catalog the same way.

The console's JavaScript loads its strings from ``GET /i18n/<lang>.json`` (the
whole catalog: the console also shows text that came from Python, by msgid)
through ``static/i18n.js``, which gives it ``_()`` and ``ngettext()``.
"""

from __future__ import annotations

import hashlib
import json
from urllib.parse import urlencode

from flask import Blueprint, Flask, Response, request
from flask_babel import Babel

from shop import i18n

COOKIE = "lang"
#: A year: a reader who chose a language keeps it.
COOKIE_SECONDS = 365 * 24 * 3600

catalog = Blueprint("i18n", __name__, url_prefix="/i18n")


def init_app(app: Flask) -> None:
    """Give ``app`` a request language, translated templates, JSON that knows lazy
    strings, and the JavaScript catalog."""
    Babel(app, locale_selector=request_language,
          default_translation_directories=str(i18n.LOCALE_DIR))
    # Flask-Babel installed its own callables; ours read the same catalog, and also
    # outside a request (a test rendering a template under i18n.language()).
    app.jinja_env.install_gettext_callables(i18n.gettext, i18n.ngettext, newstyle=True)
    app.jinja_env.globals.update(current_language=i18n.current_language,
                                 html_language=html_language, language_links=language_links)
    _lazy_strings_in_json(app)
    app.register_blueprint(catalog)
    app.after_request(_remember_choice)


def request_language() -> str:
    """The language this request reads: ``?lang=``, the cookie, Accept-Language."""
    for chosen in (request.args.get("lang"), request.cookies.get(COOKIE)):
        if chosen:
            return i18n.resolve(chosen)
    for tag, _quality in request.accept_languages:  # best first
        if i18n.normalise(tag):
            return i18n.normalise(tag)
    return i18n.ENGLISH


def html_language() -> str:
    """The current language as HTML's ``lang`` attribute wants it: ``zh-CN``."""
    return i18n.current_language().replace("_", "-")


def language_links() -> list[dict]:
    """A switch: each language, the current page's address in it, and whether it is on."""
    current = i18n.current_language()
    arguments = request.args.to_dict()
    links = []
    for language in i18n.LANGUAGES:
        query = urlencode({**arguments, "lang": language})
        links.append({"language": language, "name": i18n.NATIVE_NAMES[language],
                      "href": f"{request.path}?{query}", "current": language == current})
    return links


def _remember_choice(response: Response) -> Response:
    chosen = request.args.get("lang")
    if chosen:
        response.set_cookie(COOKIE, i18n.resolve(chosen), max_age=COOKIE_SECONDS,
                            samesite="Lax")
    # The same address answers in two languages: a cache must key on what chose it.
    response.vary.update(("Accept-Language", "Cookie"))
    response.headers.setdefault("Content-Language", html_language())
    return response


def _lazy_strings_in_json(app: Flask) -> None:
    # A lazy string (an error's message, a lab's title) in a JSON answer is said in
    # the request's language; without this, json.dumps refuses it.
    plain_default = app.json.default

    def default(value: object) -> object:
        return str(value) if i18n.is_lazy(value) else plain_default(value)

    app.json.default = default


@catalog.get("/<tag>.json")
def messages(tag: str):
    """The catalog of a language for JavaScript (English: empty, the code's own text)."""
    body = json.dumps(i18n.catalog_messages(i18n.resolve(tag)), ensure_ascii=False,
                      sort_keys=True)
    response = Response(body, mimetype="application/json")
    response.set_etag(hashlib.sha256(body.encode()).hexdigest()[:32])
    response.cache_control.public = True
    response.cache_control.max_age = 300
    return response.make_conditional(request)
