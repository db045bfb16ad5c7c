"""Lab of the client that retries (beyond the articles): an order that timed out.

A buyer who gives up waiting cannot know whether the shop took the order: it
may commit a moment later. Retrying is right (the order may have failed), and
without more it buys twice. The fix is not a lock but a key: the buyer makes
one ``Idempotency-Key`` per order and sends it with every attempt; the shop
writes it in the order's own transaction, so one key makes one order, and a
retry gets that order back (``shop.orders.idempotency``).

Forced, not left to luck: the order sits in a 600 ms business delay and the
buyer waits 200 ms, so the first attempt always times out while the shop is
still working on it, and the retry goes to the other instance.
"""

from __future__ import annotations

from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.workshop.staging.record import Lab
from shop.config import Config
from shop.i18n import N_, _

DELAY_MS = 600
PATIENCE_S = 0.2


def stage_retried_order(run) -> None:
    folder = run.parts.folder(run.lab.name)
    config = Config(database_url=f"sqlite:///{folder / 'shop.db'}")
    with Cluster(config, instances=2, runtime_dir=folder) as cluster:
        admin = ShopClient(cluster.urls[0])
        first, second = (ShopClient(url) for url in cluster.urls)
        for half, key, how in (
                ("broken", None, _("the buyer retries the same order with no key")),
                ("fix", "buyer-1-order-1", _("the buyer sends one Idempotency-Key with every "
                                             "attempt of the order"))):
            getattr(run, half)("table" + (" + Idempotency-Key" if key else ""), how)
            admin.reset([{"sku": "x", "stock": 10}])
            admin.set_settings(strategy="table", business_delay_ms=DELAY_MS, job_interval_ms=0)
            gave_up = first.order(key=key, timeout=PATIENCE_S)
            run.check(_("order on instance 1, give up after %(patience)s s (the shop takes "
                        "%(delay)s ms)", patience=f"{PATIENCE_S:g}", delay=DELAY_MS),
                      expected=_("no answer: the buyer cannot know if it was taken"),
                      observed=str(gave_up), agrees=gave_up != 201)
            retried = second.order(key=key)
            product = admin.audit()["products"][0]
            observed = _("retry answered %(answer)s; the shop has %(orders)s order(s)",
                         answer=retried, orders=product["orders"])
            if key is None:
                run.check(_("retry the order on instance 2"),
                          expected=_("the first attempt committed too: one buyer, two orders"),
                          observed=observed, agrees=retried == 201 and product["orders"] == 2)
            else:
                run.check(_("retry the order on instance 2, with the same key"),
                          expected=_("the retry gets the order the key made: one order"),
                          observed=observed, agrees=retried == 201 and product["orders"] == 1)
                reused = second.order(key=key, quantity=2)
                product = admin.audit()["products"][0]
                run.check(_("send the same key with another quantity"),
                          expected=_("refused (422): one key is one order"),
                          observed=_("answered %(answer)s; %(orders)s order(s)", answer=reused,
                                     orders=product["orders"]),
                          agrees=reused == 422 and product["orders"] == 1)


LABS = (
    Lab("C44", "retried_order", N_("A retried order is bought twice; an Idempotency-Key makes "
        "the retry find the first"), (), ("instances",), 6, stage_retried_order),
)
