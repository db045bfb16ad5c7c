"""Admin: reset the products, switch the cluster's strategy, read the audit.

When an admin token is configured, every request here must carry it as
``Authorization: Bearer <token>`` (or ``X-Admin-Token: <token>``).
"""

from __future__ import annotations

import hmac

from flask import Blueprint, jsonify, request
from sqlalchemy import select

from shop.api import schemas
from shop.api.spec import ADMIN, answers, spec
from shop.errors import Unauthorized
from shop.i18n import lazy_gettext
from shop.state import shop
from shop.store.audit import take_audit
from shop.store.models import JobRun, ProductKind
from shop.store.products import (
    DEFAULT_PRODUCTS,
    ProductSpec,
    reset_products,
    seat_labels,
)

admin = Blueprint("admin", __name__, url_prefix="/api/admin")

#: How many job runs ``GET /api/admin/jobs`` shows, newest last.
RUNS_SHOWN = 200


@admin.before_request
def require_token():
    expected = shop().config.admin_token
    if not expected:
        return None
    given = request.headers.get("X-Admin-Token", "")
    scheme, _, bearer = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        given = bearer.strip()
    # compare_digest: the time taken must not tell how much of a guess was right.
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise Unauthorized(lazy_gettext(
            "this endpoint needs the admin token (Authorization: Bearer <token>)"))
    return None


@admin.post("/reset")
@spec.validate(json=schemas.Reset, resp=answers(200, schemas.ResetDone, 400, 401, 422),
               security=ADMIN, tags=["admin"])
def reset():
    """Delete all orders and restore the products (the ones given, or the default ones)."""
    body: schemas.Reset | None = request.context.json
    specs = (tuple(_product_spec(p) for p in body.products)
             if body is not None and body.products else DEFAULT_PRODUCTS)
    state = shop()
    reset_products(state.sessions, specs)
    return jsonify({"reset": True, "products": len(specs),
                    "audit": take_audit(state.sessions).as_dict()})


@admin.get("/settings")
@spec.validate(resp=answers(200, schemas.Settings, 401), security=ADMIN, tags=["admin"])
def show_settings():
    """Show the cluster-wide settings."""
    return jsonify(shop().settings().as_dict())


@admin.put("/settings")
@spec.validate(json=schemas.SettingsChange, resp=answers(200, schemas.Settings, 400, 401, 422),
               security=ADMIN, tags=["admin"])
def change_settings():
    """Change the strategy, the business delay or the jobs, for every instance at once."""
    body: schemas.SettingsChange = request.context.json
    return jsonify(shop().change_settings(**body.model_dump(exclude_unset=True)).as_dict())


@admin.get("/audit")
@spec.validate(resp=answers(200, schemas.Audit, 401), security=ADMIN, tags=["admin"])
def audit():
    """The audit, from the database: oversold, lost updates, double-booked seats."""
    return jsonify(take_audit(shop().sessions).as_dict())


@admin.get("/jobs")
@spec.validate(resp=answers(200, schemas.JobRuns, 401), security=ADMIN, tags=["admin"])
def job_runs():
    """The latest scheduled-job runs: fire time, instance, guard, outcome."""
    with shop().sessions.begin() as session:
        runs = session.execute(select(JobRun).order_by(JobRun.id.desc()).limit(RUNS_SHOWN)
                               ).scalars().all()
        return jsonify({"runs": [run.as_dict() for run in reversed(runs)]})


@admin.get("/zookeeper-sessions")
@spec.validate(resp=answers(200, schemas.ZooKeeperSessions, 401), security=ADMIN, tags=["admin"])
def zookeeper_sessions():
    """This instance's ZooKeeper sessions (id and password), one per ZooKeeper strategy
    in use: what a fault tool needs to end one on the server, as a partition would."""
    return jsonify({"sessions": [
        {"strategy": name, "session_id": f"{session_id:#x}", "password": password.hex()}
        for name, (session_id, password) in shop().strategies.zookeeper_sessions().items()]})


def _product_spec(product: schemas.NewProduct) -> ProductSpec:
    kind = ProductKind(product.kind)
    name = product.name or product.sku
    if kind is ProductKind.ITEM:
        return ProductSpec(product.sku, name, kind, stock=product.stock or 0,
                           price_cents=product.price_cents)
    seats = product.seats if product.seats is not None else 40
    return ProductSpec(product.sku, name, kind, price_cents=product.price_cents,
                       seats=tuple(seats) if isinstance(seats, list) else seat_labels(seats))
