"""Admin: reset the catalogue, switch the cluster's strategy, read the audit.

When an admin token is configured, every request here must carry it as
``Authorization: Bearer <token>`` (or ``X-Admin-Token: <token>``).
"""

from __future__ import annotations

import hmac

from flask import Blueprint, jsonify, request
from sqlalchemy import select

from ..audit import take_audit
from ..catalogue import DEFAULT_CATALOGUE, parse_catalogue, reset_catalogue
from ..errors import BadRequest, Unauthorized, Unprocessable
from ..models import JobRun
from ..settings import JOB_GUARDS, MAX_BUSINESS_DELAY_MS, MAX_JOB_MS, write_settings
from ..state import shop
from .validation import json_object, only_fields, whole_number

admin = Blueprint("admin", __name__, url_prefix="/api/admin")

#: How many job runs ``GET /api/admin/jobs`` shows, newest last.
RUNS_SHOWN = 200
#: Job settings the API accepts, with their lowest value (-1: half the interval).
JOB_FIELDS = {"job_interval_ms": 0, "unpaid_expiry_ms": 0, "reminder_after_ms": 0,
              "job_lock_at_least_ms": -1}


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
        raise Unauthorized("this endpoint needs the admin token "
                           "(Authorization: Bearer <token>)")
    return None


@admin.post("/reset")
def reset():
    """Delete all orders and restore the catalogue (the one given, or the default)."""
    body = json_object(required=False)
    only_fields(body, {"products"})
    specs = parse_catalogue(body["products"]) if "products" in body else DEFAULT_CATALOGUE
    state = shop()
    reset_catalogue(state.sessions, specs)
    return jsonify({"reset": True, "products": len(specs), "audit": take_audit(state.sessions).as_dict()})


@admin.get("/settings")
def show_settings():
    """Show the cluster-wide settings."""
    return jsonify(shop().settings().as_dict())


@admin.put("/settings")
def change_settings():
    """Switch the strategy and/or the business delay for every instance at once."""
    body = json_object()
    only_fields(body, {"strategy", "business_delay_ms", *JOB_FIELDS, "job_guard"})
    if not body:
        raise BadRequest("give 'strategy', 'business_delay_ms' or a job setting")
    state = shop()
    strategy = body.get("strategy")
    if strategy is not None:
        if not isinstance(strategy, str):
            raise BadRequest("'strategy' must be a string")
        if strategy not in state.strategies.names():
            raise Unprocessable(f"unknown strategy {strategy!r}", known=state.strategies.names())
        state.strategies.refuse_unusable(strategy)
    delay = (whole_number(body, "business_delay_ms", low=0, high=MAX_BUSINESS_DELAY_MS)
             if "business_delay_ms" in body else None)
    jobs = {name: whole_number(body, name, low=low, high=MAX_JOB_MS)
            for name, low in JOB_FIELDS.items() if name in body}
    guard = body.get("job_guard")
    if guard is not None:
        if guard not in JOB_GUARDS:
            raise Unprocessable(f"'job_guard' must be one of {', '.join(JOB_GUARDS)}",
                                known=list(JOB_GUARDS))
        if guard == "leader" and not state.strategies.available("zk_fair"):
            raise Unprocessable("leader election needs ZooKeeper (LOCKSHOP_ZK_HOSTS), "
                                "and it cannot be reached", requires=["zookeeper"])
    with state.sessions.begin() as session:
        write_settings(session, strategy=strategy, business_delay_ms=delay, job_guard=guard,
                       **jobs)
    return jsonify(state.settings().as_dict())


@admin.get("/audit")
def audit():
    """The audit, from the database: oversold, lost updates, double-booked seats."""
    return jsonify(take_audit(shop().sessions).as_dict())


@admin.get("/jobs")
def job_runs():
    """The latest job runs: which instance ran which fire time, under which guard."""
    with shop().sessions.begin() as session:
        runs = session.execute(select(JobRun).order_by(JobRun.id.desc()).limit(RUNS_SHOWN)
                               ).scalars().all()
        return jsonify({"runs": [run.as_dict() for run in reversed(runs)]})
