"""Seat sale: a ticket release where buyers pick seats from the seat map.

Half the buyers ask for a seat they chose on the map (a random free one, as
a person clicks; popular seats collide), the other half take the first free
seat. A 409 (seat taken, sold out) is the expected answer to a lost race;
two live orders for one seat is a double booking, which the audit counts.
"""

from __future__ import annotations

import random

from locust import between, task

from loadtest.shop_user import ShopUser


class SeatBuyer(ShopUser):
    wait_time = between(0.0, 0.02)

    def on_start(self) -> None:
        super().on_start()
        self.tickets = self.product_ids("ticket")

    @task
    def buy_a_seat(self) -> None:
        if not self.tickets:
            return
        product = random.choice(self.tickets)
        body = {"product_id": product}
        if random.random() < 0.5:
            seat = self._pick_from_the_map(product)
            if seat is None:
                return
            body["seat"] = seat
        self.place_order(body, "/api/orders [named seat]" if "seat" in body
                         else "/api/orders [any seat]")

    def _pick_from_the_map(self, product: int) -> str | None:
        with self.client.get(self.url(f"/api/products/{product}"), name="/api/products/[id]",
                             catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"seat map: {response.status_code}")
                return None
            free = [s["label"] for s in response.json()["seats"] if not s["taken"]]
        # People cluster at the front: weight the first rows higher.
        return random.choice(free[: max(1, len(free) // 3)]) if free else None
