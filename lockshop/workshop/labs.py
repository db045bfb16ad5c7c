"""``lockshop lab <name>``: one broken-on-purpose lock, made to fail on demand.

Each lab starts what it needs (a Redis server, shop instances or a scratch
database), stages the failure its lock is known for (a kill, a crash hook,
a holder slower than its lease) and says what happened, step by step. A lab
succeeds when the failure shows, every time: that is the point.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import locks
from locks import Backends
from lockshop.cluster.client import ShopClient
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.redis_servers import RedisServer
from shop.app import create_schema
from shop.config import Config
from shop.orders.order_path import (
    OrderContext,
    OrderRequest,
    insert_order,
    read_stock,
    write_stock,
)
from shop.store.audit import take_audit
from shop.store.db import make_engine, make_sessions
from shop.store.models import ProductKind
from shop.store.products import ProductSpec, reset_products

LEASE_MS = 200


@dataclass
class Lab:
    name: str
    title: str
    run: Callable[[Path, Lab], bool]
    steps: list[str] = field(default_factory=list)

    def say(self, text: str) -> None:
        self.steps.append(text)
        print(f"  {len(self.steps)}. {text}", flush=True)


def run_lab(name: str) -> bool:
    lab = LABS[name]
    lab.steps.clear()
    print(f"lab {name}: {lab.title}", flush=True)
    runtime = Path(tempfile.mkdtemp(prefix=f"lockshop-lab-{name}-"))
    try:
        reproduced = lab.run(runtime, lab)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    print(f"  => {'failure reproduced' if reproduced else 'NOT reproduced'}", flush=True)
    return reproduced


# --- labs with shop instances: a holder dies ----------------------------------------------

def _stuck_lock_lab(strategy: str, faults: tuple[str, ...]):
    def run(runtime: Path, lab: Lab) -> bool:
        with ExitStack() as stack:
            redis = stack.enter_context(RedisServer(runtime, "redis"))
            config = Config(database_url=f"sqlite:///{runtime / 'shop.db'}", redis_url=redis.url,
                            lock_timeout_ms=300, faults=faults, admin_token="lab")
            cluster = stack.enter_context(Cluster(config, instances=2, runtime_dir=runtime))
            admin = ShopClient(cluster.urls[1], "lab")
            admin.reset([{"sku": "x", "name": "Lab item", "stock": 5}])
            delay = 0 if faults else 5000
            # Scheduled jobs off: their job lock is this broken lock too, and with the
            # crash hook a job taking it would kill shop-2 in the middle of the lab.
            admin.set_settings(strategy=strategy, business_delay_ms=delay, job_interval_ms=0)
            if faults:
                lab.say(f"shop-1 takes an order; with {faults[0]} its process dies between "
                        "SETNX and EXPIRE")
                ShopClient(cluster.urls[0]).order()
            else:
                lab.say("shop-1 takes an order and, inside its critical section, is killed (SIGKILL)")
                holder = threading.Thread(target=ShopClient(cluster.urls[0]).order)
                holder.start()
                time.sleep(0.5)
                os.killpg(cluster.instances[0].process.pid, signal.SIGKILL)
                holder.join()
                admin.set_settings(business_delay_ms=0)
            ttl = _redis_ttl(redis.port, "lockshop:lock:product:1")
            lab.say(f"lockshop:lock:product:1 is left behind with TTL {ttl} (-1: it never expires)")
            answers = [ShopClient(cluster.urls[1]).order() for _ in range(3)]
            lab.say(f"three more orders on shop-2 wait for the lock and get: {answers}")
            if faults:  # every instance has the crash hook: a new holder would crash too
                return ttl == -1 and answers == [503, 503, 503]
            _redis_command(redis.port, "DEL", "lockshop:lock:product:1")
            after = ShopClient(cluster.urls[1]).order()
            lab.say(f"an admin runs DEL lockshop:lock:product:1; the next order gets {after}")
            return ttl == -1 and answers == [503, 503, 503] and after == 201
    return run


# --- labs at the lock level: two holders at once --------------------------------------------

def _two_holders_lab(strategy: str, faults: tuple[str, ...]):
    def run(runtime: Path, lab: Lab) -> bool:
        with ExitStack() as stack:
            redis = stack.enter_context(RedisServer(runtime, "redis"))
            factory = locks.open_factory(strategy, Backends(redis_url=redis.url,
                                                            lease_ms=LEASE_MS, faults=faults))
            stack.callback(factory.close)
            engine = make_engine(f"sqlite:///{runtime / 'shop.db'}")
            stack.callback(engine.dispose)
            create_schema(engine)
            sessions = make_sessions(engine)
            reset_products(sessions, (ProductSpec("x", "Lab item", ProductKind.ITEM, stock=1),))
            a, b, c = (factory.lock("product:1") for _ in range(3))
            a.acquire()
            lab.say(f"A takes the lock (lease {LEASE_MS} ms) and is slow")
            if faults:
                releasing = threading.Thread(target=a.release)
                releasing.start()
                lab.say("A releases: GET says the lock is A's; A pauses before its DEL")
                time.sleep(LEASE_MS * 1.2 / 1000)
                b.acquire(blocking=False)
                lab.say("meanwhile A's lease expires and B takes the lock")
                releasing.join()
                lab.say("A's DEL runs now, and deletes B's lock")
            else:
                time.sleep(LEASE_MS * 1.5 / 1000)
                b.acquire(blocking=False)
                lab.say("A's lease expires; B takes the lock")
                a.release()
                lab.say("A finishes and releases with a plain DEL: it deletes B's lock")
            c.acquire(blocking=False)
            both = b.held and c.held
            lab.say(f"C takes the lock too: B and C both hold it ({both})")
            context = OrderContext("lab", strategy, 0, 1000)
            seen = {}
            for holder in (b, c):
                with sessions.begin() as session:
                    seen[holder] = read_stock(session, 1, ProductKind.ITEM)[0]
            for holder in (b, c):
                with sessions.begin() as session:
                    write_stock(session, 1, seen[holder] - 1)
                    insert_order(session, OrderRequest(1), None, context)
            product = take_audit(sessions).products[0]
            lab.say(f"both read stock {list(seen.values())} and sell: sold {product.sold} of "
                    f"{product.initial}, oversold {product.oversold}")
            return both and product.oversold == 1
    return run


# --- small helpers -------------------------------------------------------------------------

def _redis_command(port: int, *args: str):
    import redis
    return redis.Redis(port=port).execute_command(*args)


def _redis_ttl(port: int, key: str) -> int:
    return int(_redis_command(port, "TTL", key))


LABS = {lab.name: lab for lab in (
    Lab("redis_setnx", "SETNX with no expiry: a killed holder blocks everyone",
        _stuck_lock_lab("redis_setnx", ())),
    Lab("redis_setnx_expire", "SETNX then EXPIRE: a crash between the two",
        _stuck_lock_lab("redis_setnx_expire", ("crash_after_setnx",))),
    Lab("redis_plain_del", "release by plain DEL: a slow holder frees the next one's lock",
        _two_holders_lab("redis_plain_del", ())),
    Lab("redis_get_del", "GET, compare, then DEL: the window between the two",
        _two_holders_lab("redis_get_del", ("pause_before_del",))),
)}
