"""The Flask app factory."""

from __future__ import annotations

import logging

from flask import Flask, Response
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from locks.custom import register_spec
from shop.config import Config, locks_backends
from shop.i18n.web import init_app as init_languages
from shop.orders.custom_steps import register_step_spec
from shop.orders.order_strategies import Strategies
from shop.state import ShopState
from shop.store.db import backend_name, make_engine, make_sessions
from shop.store.models import Base
from shop.store.settings import seed_settings

INSTANCE_HEADER = "X-Lockshop-Instance"

log = logging.getLogger(__name__)


def create_app(config: Config | None = None) -> Flask:
    """Build a shop instance: one per process, all sharing one database."""
    config = config or Config.from_env()
    app = Flask(__name__, static_folder=None)
    app.json.sort_keys = False
    app.config["MAX_CONTENT_LENGTH"] = 1024 * 1024

    for named_spec in config.extra_locks:  # before the strategies are listed
        register_spec(named_spec)
    for named_spec in config.extra_steps:
        register_step_spec(named_spec)
    engine = make_engine(config.database_url)
    create_schema(engine)
    sessions = make_sessions(engine)
    state = ShopState(config, engine, sessions,
                      Strategies(locks_backends(config), backend_name(config.database_url)))
    seed_settings(sessions, state.default_settings)
    app.extensions["lockshop"] = state
    init_languages(app)  # before the views: their errors and pages are translated

    from shop.api import register_api
    from shop.web.views import web
    register_api(app)
    app.register_blueprint(web)

    @app.after_request
    def say_who_served(response: Response) -> Response:
        response.headers[INSTANCE_HEADER] = config.instance
        return response

    return app


def create_schema(engine: Engine) -> None:
    """Create missing tables. Instances starting together may race: the loser retries."""
    for attempt in (1, 2, 3):
        try:
            Base.metadata.create_all(engine)
            return
        except DBAPIError:
            if attempt == 3:
                raise
            log.info("schema creation raced with another instance; checking again")
