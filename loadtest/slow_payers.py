"""Slow payers: buyers who order and pay only some of their orders, so the jobs have work.

A steady sale rather than a rush: each buyer orders an item or a seat every
few tenths of a second, pays about a third of its orders at once, means to
pay another third later (and finds some of them expired by then: a 409 is
the right answer), and never pays the rest. The expiry job gives their stock
back and the reminder job nags them while the sale goes on.

    locust -f loadtest/slow_payers.py --headless -u 12 -r 12 -t 20s \\
        --host http://127.0.0.1:8000 --targets http://127.0.0.1:8000,http://127.0.0.1:8001
"""

from __future__ import annotations

import random
import time

from locust import between, task

from loadtest.shop_user import ShopUser

PAY_NOW = 0.33
PAY_LATER = 0.33
#: How long a late payer waits before paying.
LATER_S = (1.0, 4.0)


class SlowPayer(ShopUser):
    wait_time = between(0.1, 0.4)

    def on_start(self) -> None:
        super().on_start()
        self.products = self.product_ids("item") + self.product_ids("ticket")
        self.to_pay_later: list[tuple[float, int]] = []  # (when, order id)

    @task(3)
    def order(self) -> None:
        if not self.products:
            return
        order = self.place_order({"product_id": random.choice(self.products)}, "/api/orders")
        if order is None:
            return
        order_id = order["id"]
        chance = random.random()
        if chance < PAY_NOW:
            self._pay(order_id, late=False)
        elif chance < PAY_NOW + PAY_LATER:
            self.to_pay_later.append((time.monotonic() + random.uniform(*LATER_S), order_id))

    @task(1)
    def pay_late(self) -> None:
        due = [entry for entry in self.to_pay_later if entry[0] <= time.monotonic()]
        for entry in due:
            self.to_pay_later.remove(entry)
            self._pay(entry[1], late=True)

    def _pay(self, order_id: int, *, late: bool) -> None:
        with self.client.post(self.url(f"/api/orders/{order_id}/pay"),
                              name="/api/orders/[id]/pay" + (" [late]" if late else ""),
                              catch_response=True) as paid:
            if paid.status_code == 409 and late:
                paid.success()  # expired before we paid: the expiry job did its work
            elif paid.status_code != 200:
                paid.failure(f"{paid.status_code}: {paid.text[:200]}")
