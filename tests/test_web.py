"""The web UI: dashboard figures, the strategy switch, buying an item and a seat."""

from __future__ import annotations

from helpers import snapshot


def test_dashboard_shows_the_audit_strategy_and_instance(client):
    client.post("/api/orders", json={"product_id": 1, "quantity": 3})
    page = client.get("/").get_data(as_text=True)
    assert "Mechanical keyboard" in page
    assert "served by <strong>test</strong>" in page
    assert "<strong>none</strong>" in page
    assert "<td>100</td><td>97</td><td>3</td>" in page  # initial, remaining, sold
    assert "setInterval" in page  # refreshes itself
    assert "Audit: <strong>correct</strong>" in client.get("/panel").get_data(as_text=True)


def test_dashboard_marks_an_incorrect_audit(app, client):
    from sqlalchemy import update

    from shop.store.models import Product
    with app.extensions["lockshop"].sessions.begin() as session:
        session.execute(update(Product).where(Product.id == 1).values(stock=90))
    assert "NOT correct" in client.get("/panel").get_data(as_text=True)


def test_switching_strategy_from_the_page(client):
    response = client.post("/settings", data={"strategy": "local"})
    assert response.status_code == 303
    assert client.get("/api/strategies").json["current"] == "local"
    assert client.post("/settings", data={"strategy": "bogus"}).status_code == 422


def test_the_page_needs_the_token_when_one_is_configured(make_app, sqlite_url):
    client = make_app(sqlite_url, admin_token="t").test_client()
    assert client.post("/settings", data={"strategy": "local"}).status_code == 401
    assert client.post("/settings", data={"strategy": "local", "token": "t"}).status_code == 303


def test_buying_an_item_and_a_seat_from_the_page(app, client):
    page = client.post("/products/1", data={"quantity": "2"})
    assert page.status_code == 201
    assert "order 1 placed" in page.get_data(as_text=True)
    seat_page = client.post("/products/3", data={"seat": "C4"})
    assert "(seat C4)" in seat_page.get_data(as_text=True)
    seat_map = client.get("/products/3").get_data(as_text=True)
    assert 'class="seat taken"' in seat_map and 'value="C4"' in seat_map


def test_page_errors_keep_the_status_and_change_nothing(app, client):
    client.post("/products/3", data={"seat": "C4"})
    before = snapshot(app)
    assert client.post("/products/3", data={"seat": "C4"}).status_code == 409
    assert client.post("/products/1", data={"quantity": "many"}).status_code == 400
    assert client.post("/products/1", data={"quantity": "0"}).status_code in (400, 422)
    assert client.get("/products/99").status_code == 404
    assert snapshot(app) == before


def test_the_panel_shows_this_instances_lock_metrics(make_app, sqlite_url):
    client = make_app(sqlite_url, strategy="table").test_client()
    client.post("/api/orders", json={"product_id": 1})
    panel = client.get("/panel").get_data(as_text=True)
    assert "Locks taken by test since it started" in panel
    assert "<tr><td>table</td><td>" in panel
    assert 'href="/metrics"' in panel


def test_the_page_switches_the_job_guard_and_shows_the_jobs(client):
    answer = client.post("/settings", data={"strategy": "table", "job_guard": "strategy"})
    assert answer.status_code == 303
    page = " ".join(client.get("/").get_data(as_text=True).split())
    assert "Scheduled jobs" in page and "guarded by <strong>table</strong>" in page
    # No ZooKeeper for this app: leader election is refused, and nothing changes.
    refused = client.post("/settings", data={"strategy": "none", "job_guard": "leader"})
    assert refused.status_code == 422
    assert client.get("/api/admin/settings").json["strategy"] == "table"


def test_the_shop_alone_has_no_console_and_an_instance_of_up_serves_it(make_app, sqlite_url):
    """The console is the workshop's (lockshop/console), mounted on each instance by
    ``lockshop.console.instance``: the shop alone neither serves nor links it."""
    import re

    from lockshop.console.page import mount

    alone = make_app(sqlite_url).test_client()
    assert alone.get("/console").status_code == 404
    assert 'href="/console"' not in alone.get("/").get_data(as_text=True)

    app = make_app(sqlite_url)
    mount(app, control_url="http://127.0.0.1:9")
    client = app.test_client()
    assert 'href="/console"' in client.get("/").get_data(as_text=True)
    page = client.get("/console").get_data(as_text=True)
    assert 'data-control="http://127.0.0.1:9"' in page
    loaded = re.findall(r'(?:src|href)="(/console/static/[^"]+)"', page)
    assert len(loaded) == 5  # its styles, uPlot's two files, the charts and the console
    for path in loaded:
        with client.get(path) as answer:  # a file: closed when read
            assert answer.status_code == 200, path
