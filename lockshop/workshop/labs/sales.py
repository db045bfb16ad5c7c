"""Labs of a sale's read-check-write (A0, A1, A4): the flash sale that oversells
with no guard, and the guards that stop it.

Buyers are threads of this process, released at once by a barrier, each
taking an order through the shop's own order path on a fresh SQLite
database; the business delay keeps every critical section open long enough
that unguarded ones must overlap.
"""

from __future__ import annotations

import threading

from locks import Backends
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.workshop.staging.record import Lab
from shop.config import Config
from shop.errors import SoldOut
from shop.orders.order_path import OrderContext, OrderRequest
from shop.orders.order_strategies import Strategies
from shop.store.audit import take_audit
from shop.store.db import engine_of
from shop.store.models import ProductKind
from shop.store.products import ProductSpec
from shop.i18n import N_, _, join

STOCK = 5
BUYERS = 12
DELAY_MS = 100


def flash_sale(run, strategy: str, **backends) -> dict:
    """BUYERS buy one unit each of a product with STOCK, all at once, under ``strategy``."""
    strategy = run.version(strategy)
    sessions = run.shop_database(ProductSpec("x", "Lab item", ProductKind.ITEM, stock=STOCK))
    strategies = Strategies(Backends(**backends), "sqlite")
    place = strategies.runner(strategy)
    context = OrderContext("lab", strategy, business_delay_ms=DELAY_MS, lock_timeout_ms=30_000)
    start = threading.Barrier(BUYERS)
    refused: list[int] = []

    def buyer() -> None:
        start.wait()
        try:
            place(engine_of(sessions), OrderRequest(1), context)
        except SoldOut:
            refused.append(1)

    threads = [threading.Thread(target=buyer) for _ in range(BUYERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    strategies.close()
    product = take_audit(sessions).products[0]
    return {"sold": product.sold, "remaining": product.remaining, "oversold": product.oversold,
            "lost updates": product.lost_updates, "refused": len(refused),
            "retries": product.retries}


#: The figures' names, as a lab's observation says them.
FIGURES = {"sold": N_("sold"), "remaining": N_("remaining"), "oversold": N_("oversold"),
           "lost updates": N_("lost updates"), "refused": N_("refused"),
           "retries": N_("retries")}


def _described(figures: dict, *keys: str) -> str:
    return join(f"{_(FIGURES[key])} {figures[key]}" for key in keys)


def _buyers_at_once() -> str:
    return _("%(buyers)s buyers order at the same moment; %(stock)s units for sale",
             buyers=BUYERS, stock=STOCK)


def _no_guard_first(run) -> None:
    run.broken("none", _("read the stock, check it, wait, write stock - 1: nothing guards it"))
    figures = flash_sale(run, "none")
    run.check(_buyers_at_once(),
              expected=_("every buyer reads the same stock and sells: more sold than there "
                         "was"),
              observed=_described(figures, "sold", "oversold", "lost updates"),
              agrees=figures["oversold"] > 0)


def stage_no_lock(run) -> None:
    _no_guard_first(run)
    run.fix("redis", _("the read-check-write inside a Redis lock per product"))
    server, = run.parts.redis()
    figures = flash_sale(run, "redis", redis_url=server.url)
    run.check(_buyers_at_once(),
              expected=_("one at a time: %(stock)s sold, the rest refused as sold out",
                         stock=STOCK),
              observed=_described(figures, "sold", "oversold", "refused"),
              agrees=(figures["sold"], figures["oversold"], figures["refused"])
              == (STOCK, 0, BUYERS - STOCK))


def stage_optimistic(run) -> None:
    _no_guard_first(run)
    run.fix("optimistic", _("a version column: write only WHERE version = what was read, "
                            "else read again"))
    figures = flash_sale(run, "optimistic")
    run.check(_buyers_at_once(),
              expected=_("conflicts become retries: %(stock)s sold, nothing oversold",
                         stock=STOCK),
              observed=_described(figures, "sold", "oversold", "retries", "refused"),
              agrees=figures["sold"] == STOCK and figures["oversold"] == 0
              and figures["retries"] > 0)


def stage_atomic(run) -> None:
    _no_guard_first(run)
    run.fix("atomic", _("one statement: UPDATE ... SET stock = stock - 1 WHERE stock >= 1; "
                        "no lock at all"))
    figures = flash_sale(run, "atomic")
    run.check(_buyers_at_once(),
              expected=_("the database checks and writes at once: %(stock)s sold, the rest "
                         "refused", stock=STOCK),
              observed=_described(figures, "sold", "oversold", "refused"),
              agrees=(figures["sold"], figures["oversold"], figures["refused"])
              == (STOCK, 0, BUYERS - STOCK))


# --- C03: a thread lock, in one process and across two ---------------------------------------

def _sale_over_http(urls: list[str], buyers: int = 10) -> None:
    start = threading.Barrier(buyers)

    def buyer(n: int) -> None:
        client = ShopClient(urls[n % len(urls)])
        start.wait()
        client.order()

    threads = [threading.Thread(target=buyer, args=(n,)) for n in range(buyers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def stage_thread_lock(run) -> None:
    server, = run.parts.redis()
    folder = run.parts.folder(run.lab.name)
    config = Config(database_url=f"sqlite:///{folder / 'shop.db'}", redis_url=server.url)
    with Cluster(config, instances=2, runtime_dir=folder) as cluster:
        admin = ShopClient(cluster.urls[0])
        for half, strategy, how in (
                ("broken", "local", _("a threading.Lock per product, in each process")),
                ("fix", "redis", _("a Redis lock per product, shared by every process"))):
            getattr(run, half)(strategy, how)
            for spread, urls in ((_("one instance"), cluster.urls[:1]),
                                 (_("two instances (two processes)"), cluster.urls)):
                admin.reset([{"sku": "x", "stock": STOCK}])
                admin.set_settings(strategy=run.version(strategy), business_delay_ms=DELAY_MS,
                                   job_interval_ms=0)
                _sale_over_http(urls)
                product = admin.audit()["products"][0]
                observed = _described(product, "sold", "oversold")
                action = _("10 buyers at once on %(where)s; %(stock)s units for sale",
                           where=spread, stock=STOCK)
                if half == "broken" and len(urls) == 2:
                    run.check(action, expected=_("each process has its own lock: they overlap "
                                                 "and oversell"),
                              observed=observed, agrees=product["oversold"] > 0)
                else:
                    run.check(action, expected=_("one at a time: %(stock)s sold, none oversold",
                                                 stock=STOCK),
                              observed=observed,
                              agrees=(product["sold"], product["oversold"]) == (STOCK, 0))


LABS = (
    Lab("C03", "thread_lock", N_("A thread lock is correct in one process and useless across "
        "several"), ("A0",), ("redis", "instances"), 8, stage_thread_lock),
    Lab("C01", "no_lock", N_("With no lock, a flash sale sells more than the stock; a lock "
        "per product sells exactly the stock"), ("A0", "A4"), ("redis",), 2, stage_no_lock),
    Lab("C07", "optimistic", N_("Optimistic locking with a version column: conflicts become "
        "retries, nothing is oversold"), ("A1",), (), 2, stage_optimistic),
    Lab("C25", "atomic", N_("You may not need a lock: one conditional UPDATE is correct"),
        (), (), 1, stage_atomic),
)
