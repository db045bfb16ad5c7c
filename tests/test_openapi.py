"""The OpenAPI document describes every route the app serves under /api."""

from __future__ import annotations

import re

from shop.api.errors import register_error_handlers  # noqa: F401  (the one error shape)


def api_routes(app) -> set[tuple[str, str]]:
    routes = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/"):
            continue
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            routes.add((path, method.lower()))
    return routes


def test_every_api_route_is_described(client, app):
    document = client.get("/api/openapi.json").json
    described = {(path, method) for path, item in document["paths"].items() for method in item}
    assert api_routes(app) == described


def test_every_operation_has_responses_and_errors_use_the_error_shape(client):
    document = client.get("/api/openapi.json").json
    assert document["openapi"].startswith("3.1")
    for path, item in document["paths"].items():
        for method, operation in item.items():
            assert operation["responses"], (path, method)
            assert operation.get("summary"), (path, method)
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/Error"}, (path, status)


def test_every_reference_resolves(client):
    document = client.get("/api/openapi.json").json
    text = str(document)
    for name in re.findall(r"#/components/schemas/(\w+)", text):
        assert name in document["components"]["schemas"], name
