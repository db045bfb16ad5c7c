"""The OpenAPI 3.1 document for the REST API.

Written by hand, close to the views it describes; a test checks that every
route the app serves under /api is described here, with its methods.
"""

from __future__ import annotations

from ..orders import MAX_QUANTITY
from .validation import MAX_ID


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _ok(description: str, schema: str, status: str = "200") -> dict:
    return {status: {"description": description,
                     "content": {"application/json": {"schema": _ref(schema)}}}}


def _errors(*statuses: int) -> dict:
    reasons = {
        400: "malformed body: not a JSON object, a wrong type, an unknown field",
        401: "the admin token is missing or wrong",
        404: "no such product or order",
        409: "sold out, seat taken, or the order is not pending",
        422: "well-formed but impossible: out of range, a seat on an item, an unknown strategy",
        503: "the lock could not be had in time, its backend is down, or fencing refused "
             "a stale write; retry after Retry-After seconds. Nothing was written",
    }
    return {str(s): {"description": reasons[s],
                     "content": {"application/json": {"schema": _ref("Error")}}}
            for s in statuses}


def _body(schema: str, required: bool = True) -> dict:
    return {"required": required,
            "content": {"application/json": {"schema": _ref(schema)}}}


def _id_param(name: str) -> dict:
    return {"name": name, "in": "path", "required": True,
            "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ID}}


ADMIN = [{"adminToken": []}]

_SETTINGS = {
    "strategy": {"type": "string"},
    "business_delay_ms": {"type": "integer", "minimum": 0, "maximum": 10000},
    "job_guard": {"enum": ["strategy", "leader"],
                  "description": "what guards the scheduled jobs: the strategy's lock, "
                                 "or ZooKeeper leader election"},
    "job_interval_ms": {"type": "integer", "minimum": 0, "description": "0: jobs off"},
    "unpaid_expiry_ms": {"type": "integer", "minimum": 0},
    "reminder_after_ms": {"type": "integer", "minimum": 0},
    "job_lock_at_least_ms": {"type": "integer", "minimum": -1,
                             "description": "-1: half the interval"},
}

_SCHEMAS = {
    "Error": {"type": "object", "required": ["error", "message"], "properties": {
        "error": {"type": "string", "examples": ["sold_out"]},
        "message": {"type": "string"}}},
    "Product": {"type": "object", "properties": {
        "id": {"type": "integer"}, "sku": {"type": "string"}, "name": {"type": "string"},
        "kind": {"enum": ["item", "ticket"]}, "price_cents": {"type": "integer"},
        "initial_stock": {"type": "integer"},
        "stock": {"type": "integer", "description": "for tickets: free seats"},
        "seats": {"type": "array", "items": {"type": "object", "properties": {
            "label": {"type": "string"}, "taken": {"type": "boolean"},
            "orders": {"type": "array", "items": {"type": "integer"}}}}}}},
    "Stocktake": {"type": "object", "properties": {
        "product_id": {"type": "integer"}, "initial": {"type": "integer"},
        "stock": {"type": "integer"}, "sold": {"type": "integer"},
        "strategy": {"type": "string"},
        "guard": {"enum": ["shared", "exclusive", "none", "snapshot"],
                  "description": "a read lock readers share, an exclusive lock, no lock, "
                                 "or one transaction"},
        "consistent": {"type": "boolean", "description": "stock + sold == initial"}}},
    "ProductList": {"type": "object", "properties": {
        "products": {"type": "array", "items": _ref("Product")}}},
    "NewOrder": {"type": "object", "additionalProperties": False, "required": ["product_id"],
                 "properties": {
                     "product_id": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
                     "quantity": {"type": "integer", "minimum": 1, "maximum": MAX_QUANTITY,
                                  "default": 1, "description": "must be 1 for a ticket"},
                     "seat": {"type": "string", "pattern": "^[A-Za-z0-9]{1,16}$",
                              "description": "tickets only; omit for the first free seat"}}},
    "Order": {"type": "object", "properties": {
        "id": {"type": "integer"}, "product_id": {"type": "integer"},
        "quantity": {"type": "integer"}, "seat": {"type": ["string", "null"]},
        "status": {"enum": ["pending", "paid", "cancelled", "expired"]},
        "instance": {"type": "string"}, "strategy": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
        "paid_at": {"type": ["string", "null"], "format": "date-time"}}},
    "Strategy": {"type": "object", "properties": {
        "name": {"type": "string"}, "family": {"type": "string"}, "summary": {"type": "string"},
        "correct_across_instances": {"type": "boolean"}, "failure_mode": {"type": "string"},
        "requires": {"type": "array", "items": {"type": "string"}},
        "available": {"type": "boolean"}}},
    "StrategyList": {"type": "object", "properties": {
        "current": {"type": "string"},
        "strategies": {"type": "array", "items": _ref("Strategy")}}},
    "Settings": {"type": "object", "properties": _SETTINGS},
    "SettingsChange": {"type": "object", "additionalProperties": False, "minProperties": 1,
                       "properties": _SETTINGS},
    "ProductSpec": {"type": "object", "additionalProperties": False, "required": ["sku"],
                    "properties": {
                        "sku": {"type": "string"}, "name": {"type": "string"},
                        "kind": {"enum": ["item", "ticket"], "default": "item"},
                        "stock": {"type": "integer", "minimum": 0, "description": "items"},
                        "seats": {"description": "tickets: a count or a list of labels",
                                  "oneOf": [{"type": "integer", "minimum": 1},
                                            {"type": "array", "items": {"type": "string"}}]},
                        "price_cents": {"type": "integer", "minimum": 0}}},
    "Reset": {"type": "object", "additionalProperties": False, "properties": {
        "products": {"type": "array", "items": _ref("ProductSpec")}}},
    "ProductAudit": {"type": "object", "properties": {
        k: {"type": "integer"} for k in ("product_id", "initial", "remaining", "sold", "orders",
                                         "oversold", "lost_updates", "double_booked_seats",
                                         "retries", "stale_writes_rejected")}},
    "JobsAudit": {"type": "object", "properties": {
        "correct": {"type": "boolean"},
        **{k: {"type": "integer"} for k in (
            "runs", "fire_times", "duplicate_runs", "lost_runs", "orders_expired",
            "stock_restored_more_than_once", "reminders", "duplicate_reminders")}}},
    "Audit": {"type": "object", "properties": {
        "correct": {"type": "boolean"},
        "totals": {"type": "object", "additionalProperties": {"type": "integer"}},
        "products": {"type": "array", "items": _ref("ProductAudit")},
        "jobs": _ref("JobsAudit")}},
    "JobRuns": {"type": "object", "properties": {"runs": {"type": "array", "items": {
        "type": "object", "properties": {
            "id": {"type": "integer"}, "job": {"type": "string"},
            "fire_time": {"type": "string"}, "instance": {"type": "string"},
            "guard": {"type": "string"}, "outcome": {"enum": ["running", "done", "lost"]},
            "handled": {"type": "integer"}, "started_at": {"type": "string"}}}}}},
    "Health": {"type": "object", "properties": {
        "status": {"const": "ok"}, "instance": {"type": "string"}}},
}


def openapi_document() -> dict:
    return {
        "openapi": "3.1.0",
        "info": {"title": "lockshop", "version": "0.1.0",
                 "description": "A shop whose order path can be guarded by many locking "
                                "strategies. Every answer carries X-Lockshop-Instance."},
        "paths": {
            "/api/products": {"get": {"summary": "List products", "operationId": "listProducts",
                                      "responses": _ok("all products", "ProductList")}},
            "/api/products/{product_id}": {"get": {
                "summary": "Show a product (with its seats, for a ticket)",
                "operationId": "showProduct", "parameters": [_id_param("product_id")],
                "responses": {**_ok("the product", "Product"), **_errors(404)}}},
            "/api/products/{product_id}/stocktake": {"get": {
                "summary": "Count a product in two reads under the strategy's read lock",
                "operationId": "stocktake", "parameters": [_id_param("product_id")],
                "responses": {**_ok("the count, and whether it adds up", "Stocktake"),
                              **_errors(404, 503)}}},
            "/api/orders": {"post": {
                "summary": "Place an order through the current strategy",
                "operationId": "createOrder", "requestBody": _body("NewOrder"),
                "responses": {**_ok("the order, pending payment", "Order", "201"),
                              **_errors(400, 404, 409, 422, 503)}}},
            "/api/orders/{order_id}": {"get": {
                "summary": "Show an order", "operationId": "showOrder",
                "parameters": [_id_param("order_id")],
                "responses": {**_ok("the order", "Order"), **_errors(404)}}},
            "/api/orders/{order_id}/pay": {"post": {
                "summary": "Pay a pending order", "operationId": "payOrder",
                "parameters": [_id_param("order_id")],
                "responses": {**_ok("the paid order", "Order"), **_errors(404, 409)}}},
            "/api/strategies": {"get": {
                "summary": "List strategies, the current one, and which are available",
                "operationId": "listStrategies",
                "responses": _ok("the catalogue", "StrategyList")}},
            "/api/health": {"get": {"summary": "Liveness, and which instance answered",
                                    "operationId": "health", "responses": _ok("up", "Health")}},
            "/api/openapi.json": {"get": {"summary": "This document", "operationId": "openapi",
                                          "responses": {"200": {"description": "OpenAPI 3.1"}}}},
            "/api/admin/reset": {"post": {
                "summary": "Delete all orders and restore the catalogue",
                "operationId": "reset", "security": ADMIN,
                "requestBody": _body("Reset", required=False),
                "responses": {"200": {"description": "reset done; the fresh audit"},
                              **_errors(400, 401, 422)}}},
            "/api/admin/settings": {
                "get": {"summary": "Show cluster-wide settings", "operationId": "showSettings",
                        "security": ADMIN,
                        "responses": {**_ok("the settings", "Settings"), **_errors(401)}},
                "put": {"summary": "Change the strategy and/or business delay for every instance",
                        "operationId": "changeSettings", "security": ADMIN,
                        "requestBody": _body("SettingsChange"),
                        "responses": {**_ok("the new settings", "Settings"),
                                      **_errors(400, 401, 422)}}},
            "/api/admin/audit": {"get": {
                "summary": "Audit from the database: oversold, lost updates, double bookings",
                "operationId": "audit", "security": ADMIN,
                "responses": {**_ok("the audit", "Audit"), **_errors(401)}}},
            "/api/admin/jobs": {"get": {
                "summary": "The latest scheduled-job runs: fire time, instance, guard, outcome",
                "operationId": "jobRuns", "security": ADMIN,
                "responses": {**_ok("the runs, newest last", "JobRuns"), **_errors(401)}}},
        },
        "components": {
            "schemas": _SCHEMAS,
            "securitySchemes": {"adminToken": {
                "type": "http", "scheme": "bearer",
                "description": "required only when LOCKSHOP_ADMIN_TOKEN is set"}},
        },
    }
