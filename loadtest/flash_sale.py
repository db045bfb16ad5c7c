"""Flash sale: many buyers, little stock, every instance at once.

Buyers order items (one unit at a time) and seats (the first free one, so
that buyers collide on the same seat, as at a real ticket release), and pay
about half of what they get. A 409 (sold out, seat taken) is the expected
answer once stock runs out; a 503 (lock not had in time) is counted as a
failure, and the order retried with its idempotency key (``ShopUser.place_order``). At the end the shop's audit decides whether the run was correct.

    locust -f loadtest/flash_sale.py --headless -u 30 -r 30 -t 20s \\
        --host http://127.0.0.1:8000 \\
        --targets http://127.0.0.1:8000,http://127.0.0.1:8001,http://127.0.0.1:8002
"""

from __future__ import annotations

import random

from locust import between, task

from loadtest.shop_user import ShopUser

PAY_SHARE = 0.5  # of accepted orders, how many get paid


class FlashSaleBuyer(ShopUser):
    wait_time = between(0.0, 0.02)

    def on_start(self) -> None:
        super().on_start()
        self.items = self.product_ids("item")
        self.tickets = self.product_ids("ticket")

    @task(3)
    def buy_item(self) -> None:
        if self.items:
            self._order({"product_id": random.choice(self.items), "quantity": 1}, "item")

    @task(1)
    def buy_seat(self) -> None:
        if self.tickets:
            self._order({"product_id": random.choice(self.tickets)}, "seat")

    def _order(self, body: dict, what: str) -> None:
        order = self.place_order(body, f"/api/orders [{what}]")
        if order is not None and random.random() < PAY_SHARE:
            with self.client.post(self.url(f"/api/orders/{order['id']}/pay"),
                                  name="/api/orders/[id]/pay", catch_response=True) as paid:
                if paid.status_code != 200:
                    paid.failure(f"{paid.status_code}: {paid.text[:200]}")
