"""The business rule as the judge: a flash sale across three shop instances.

Three instances (separate processes, as three servers would be) sell with
the student's lock, plugged in as a strategy; buyers arrive together at all
three, for five units of an item and for the seats of a ticket. The shop's
audit, read from the database, is the verdict: nothing oversold, no seat
sold twice, and no two holds of one lock that overlapped and both wrote.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from lockshop.cluster.client import ShopClient
from lockshop.cluster.hold_logs import collect_holds, overlap_audit
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.network import Host
from lockshop.exercises import remote_locks
from lockshop.exercises.remote_locks import as_student
from lockshop.exercises.grading import Check, Grading
from shop.config import Config
from sqlalchemy.engine import make_url
from shop.i18n import _, lazy_gettext

INSTANCES = 3
STOCK = 5
SEATS = 3
BUYERS = 12
DELAY_MS = 60
#: The locks' lease in the sale. The sale judges exclusion across processes, not leases
#: (other checks do): a hold takes one business delay, and a lease far longer keeps a
#: stall of seconds on a busy machine from deciding a correct lock's verdict (seen once in
#: a suite's run, with a lease of 5 s: two holds that both wrote, nothing oversold).
LEASE_MS = 15_000
TOKEN = "exercise"


@dataclass(frozen=True)
class Sold:
    """What a sale on three instances left: the audit's two products, every buyer's answer,
    how long the buyers took, and (when read) how many overlapping holds both wrote."""

    item: dict
    ticket: dict
    answers: list
    seconds: float
    both_wrote: int = 0
    #: The longest hold of the sale, in seconds (when the holds were read).
    longest_hold: float = 0.0

    @property
    def correct(self) -> bool:
        """Everything sold, nothing oversold, no seat sold twice."""
        return (self.item["oversold"] == 0 and self.ticket["oversold"] == 0
                and self.ticket["double_booked_seats"] == 0
                and self.item["sold"] == STOCK and self.ticket["sold"] == SEATS)

    def answers_seen(self) -> str:
        return ", ".join(sorted(set(map(str, self.answers))))


@contextmanager
def three_shops(config: Config, folder: Path, products: list[dict], *,
                delay_ms: int = DELAY_MS) -> Iterator[tuple[Cluster, list[ShopClient]]]:
    """Three instances of the shop on ``config`` with the exercise as their strategy,
    stocked with ``products``, each order held ``delay_ms`` in its business delay."""
    folder.mkdir(parents=True, exist_ok=True)
    config = replace(config, admin_token=TOKEN, strategy="exercise", job_interval_ms=0)
    with StudentsCluster(config, instances=INSTANCES, runtime_dir=folder) as cluster:
        shops = [ShopClient(url, TOKEN, timeout=60) for url in cluster.urls]
        shops[0].reset(products)
        shops[0].set_settings(strategy="exercise", business_delay_ms=delay_ms,
                              job_interval_ms=0)
        yield cluster, shops


class _StudentsHost(Host):
    """A host whose commands run as the student's user (``remote_locks.as_student``)."""

    def command(self, argv) -> list[str]:
        return as_student(super().command(argv))


class StudentsCluster(Cluster):
    """The shop instances that run the student's code, run as the student's user where the
    grader has one to give (the room's sandbox): they can reach the grader no more than
    the lock host can. Their database is then theirs to write too (its folder and file
    opened to them)."""

    def host_of(self, name: str) -> Host:
        host = super().host_of(name)
        return _StudentsHost(host.name, host.address, host.namespace)

    def prepare_database(self) -> None:
        super().prepare_database()
        if remote_locks.STUDENT_USER is None:
            return
        self.runtime_dir.chmod(0o777)
        url = make_url(self.config.database_url)
        if url.get_backend_name() == "sqlite" and url.database:  # a server's: its own user's
            Path(url.database).chmod(0o666)


def sell_on_three(config: Config, folder: Path, *, read_holds: bool = False) -> Sold:
    """BUYERS buyers of an item and as many of a ticket's seats at once, spread over three
    shop instances, and the audit. ``read_holds``: collect the instances' hold logs too
    (for a lock's sale, where holds are logged)."""
    products = [{"sku": "item", "stock": STOCK},
                {"sku": "ticket", "kind": "ticket", "seats": SEATS}]
    with three_shops(config, folder, products) as (cluster, shops):
        since, started = time.time(), time.monotonic()
        answers = _buyers_at_once(shops)
        seconds = time.monotonic() - started
        audit = shops[0].audit()
        holds = _holds(cluster, since) if read_holds else None
    item, ticket = audit["products"]
    if holds is None:
        return Sold(item, ticket, answers, seconds)
    return Sold(item, ticket, answers, seconds, overlap_audit(holds)["both_wrote"],
                _longest_hold(holds))


def flash_sale(grading: Grading) -> tuple[str, bool]:
    backends = grading.servers_backends(lease_ms=LEASE_MS)
    config = Config(database_url=f"sqlite:///{grading.runtime / 'sale' / 'shop.db'}",
                    redis_url=backends.redis_url, redis_urls=backends.redis_urls,
                    zk_hosts=backends.zk_hosts, lock_lease_ms=LEASE_MS, lock_timeout_ms=30_000,
                    extra_locks=(f"exercise={grading.spec}",))
    sold = sell_on_three(config, grading.runtime / "sale", read_holds=True)
    observed = _("item: sold %(sold)s of %(stock)s, oversold %(oversold)s; ticket: %(seats_sold)s "
                 "seats of %(seats)s, double-booked %(double)s; overlapping holds that both "
                 "wrote: %(both)s; answers %(answers)s",
                 sold=sold.item["sold"], stock=STOCK, oversold=sold.item["oversold"],
                 seats_sold=sold.ticket["sold"], seats=SEATS,
                 double=sold.ticket["double_booked_seats"], both=sold.both_wrote,
                 answers=sold.answers_seen())
    if sold.both_wrote:  # whether a hold outlived its lease, or two were granted at once
        observed += "; " + _("the longest hold: %(held).1f s (the lease: %(lease)s s)",
                             held=sold.longest_hold, lease=LEASE_MS // 1000)
    return observed, sold.correct and sold.both_wrote == 0


def _buyers_at_once(shops: list[ShopClient]) -> list:
    """BUYERS buyers of the item and as many of the ticket, spread over the instances."""
    start = threading.Barrier(2 * BUYERS)
    answers: list = []

    def buyer(n: int, product: int) -> None:
        start.wait()
        answers.append(shops[n % len(shops)].order(product))

    threads = [threading.Thread(target=buyer, args=(n, product), daemon=True)
               for product in (1, 2) for n in range(BUYERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return answers


def _holds(cluster: Cluster, since: float) -> dict:
    instances = {instance.name: instance.url for instance in cluster.instances}
    return collect_holds(instances, since, labs=False, timeout=5)


def _longest_hold(collected: dict) -> float:
    """The longest hold in ``collected``, in seconds (one still open counts until now)."""
    return max(((hold["released"] or collected["now"]) - hold["acquired"]
                for source in collected["sources"] for hold in source["holds"]), default=0.0)


def checks(backend: str, *, still_held_written: bool = True) -> tuple[Check, ...]:
    """The sale, named for the backend's lesson: across processes (C03), or the article's
    two ticket offices selling one seat (C02). Its hint names ``_still_held()`` only where
    the student writes one (``still_held_written``); elsewhere the base class's asks
    Redis whether the key still holds the lock's token."""
    lesson = "C02" if backend == "zookeeper" else "C03"
    hint = SALE.hint if still_held_written else HINT_TOKEN_READ_BACK
    return (replace(SALE, lesson=lesson, hint=hint),)


SALE = Check(
    "C03",
    lazy_gettext("%(buyers)s buyers at once on %(instances)s shop instances for %(stock)s units, "
                 "and %(buyers)s for %(seats)s seats, each order inside your lock",
                 buyers=BUYERS, instances=INSTANCES, stock=STOCK, seats=SEATS),
    lazy_gettext("%(stock)s units and %(seats)s seats sold, none oversold or double-booked, no "
                 "two holds that both wrote", stock=STOCK, seats=SEATS),
    lazy_gettext("Three processes must exclude each other: the lock must live in the server (a "
                 "key or a node), never in the process's memory, and every instance must see "
                 "the same lock for the same product (use self.key, or the lock's path, as "
                 "given). If every order answered 503, the shop's ensure_held() found your "
                 "_still_held() saying no."),
    flash_sale, sale=True)

#: The sale's hint for a skeleton with no ``_still_held()`` of its own to write.
HINT_TOKEN_READ_BACK = lazy_gettext(
    "Three processes must exclude each other: the lock must live in the server (a key), never "
    "in the process's memory, and every instance must see the same lock for the same product "
    "(use self.key, as given). If every order answered 503, the shop's ensure_held() found "
    "the key no longer holding your token: write self.token as the key's value (the base "
    "class reads it back with GET before each write).")
