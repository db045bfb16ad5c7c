"""The OpenAPI document describes every route the app serves under /api, from
the same models that validate requests; its docs page works offline."""

from __future__ import annotations

import re

from shop.api.errors import register_error_handlers  # noqa: F401  (the one error shape)


def api_routes(app) -> set[tuple[str, str]]:
    routes = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/") or rule.rule.startswith("/api/docs/"):
            continue  # the docs pages are about the API, not part of it
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


def test_the_document_is_generated_from_the_models_that_validate(client):
    schema = client.get("/api/openapi.json").json["components"]["schemas"]["NewOrder"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["product_id"]
    assert schema["properties"]["quantity"]["maximum"] == 100
    # ... and the same limit refuses a request.
    assert client.post("/api/orders", json={"product_id": 1, "quantity": 101}).status_code == 422


def test_the_docs_page_is_served_with_everything_inline(client):
    page = client.get("/api/docs/swagger/")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "SwaggerUIBundle" in html and "/api/docs/openapi.json" in html
    # A workshop room may have no internet: no script or style from elsewhere.
    assert not re.search(r"""<(script|link)[^>]+(src|href)=["']https?://""", html)
