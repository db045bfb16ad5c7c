"""``lockshop bench zookeeper``: our ZooKeeper locks against kazoo's own ``Lock`` recipe.

On a standalone ZooKeeper of its own (settings in ``lockshop.cluster.zookeeper_servers``:
``forceSync=yes``, ZooKeeper's default, so every create and delete is
fsynced) plus a Redis server for the contended section's counter, with the
harness of ``lockshop.bench.harness``:

* **uncontended**: a raw ephemeral create + delete loop (the ceiling: two
  writes), ``zk_simple``, ``zk_fair``, ``zk_rw`` (its write lock) and kazoo's
  ``Lock``;
* **contended**: 8 processes, the same locks;
* **the goal**: ``zk_fair`` uncontended at least 2.5 times kazoo's ``Lock`` (as kazoo
  makes it), side by side in 300 short turns (``lockshop.turns.side_by_side``).

kazoo's ``Lock`` is used as its documentation shows: one object per process,
acquired and released again and again (a new one per section would add a
round trip to check its parent path). It runs twice: on a client as kazoo
makes it, and on the client our locks use (``locks.support.zk_client``: the same
kazoo, sending from the caller's thread and waiting with ``poll``). The
first is what a kazoo user gets; the second compares the recipes alone, on
equal clients.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from kazoo.client import KazooClient

from locks.support.zk_client import new_client
from lockshop.bench.harness import (
    SIDE_BY_SIDE_TURNS,
    Endpoints,
    Figures,
    Maker,
    measure,
    opened,
    rate,
    report,
    round_ratios,
    servers_of_its_own,
    side_by_side_goal,
    uncontended_side_by_side,
)
from lockshop.bench.output import say
from lockshop.cluster.redis_servers import RedisServer
from lockshop.cluster.zookeeper_servers import TICK_MS, ZooKeeperServer
from shop.i18n import N_, _, join

OURS = ("zk_simple", "zk_fair", "zk_rw")
RAW = "raw create + delete"
KAZOO = "kazoo Lock"
KAZOO_ON_OUR_CLIENT = "kazoo Lock, our client"
PEERS = (KAZOO, KAZOO_ON_OUR_CLIENT)


def lock_maker(kind: str, endpoints: Endpoints) -> Maker | None:
    """The ZooKeeper peers of our locks, by name; None for a kind that is not one of them."""
    if kind not in (RAW, *PEERS):
        return None
    client = (KazooClient(endpoints.zk_hosts) if kind == KAZOO
              else new_client(endpoints.zk_hosts, timeout=10))
    client.start(timeout=10)
    opened(client.stop)
    client.ensure_path("/bench")
    if kind == RAW:
        def raw(name):
            path = f"/bench/{name}"
            return (lambda: client.create(path, ephemeral=True)), (lambda: client.delete(path))
        return raw
    recipes = {}

    def kazoo_lock(name):
        if name not in recipes:
            recipes[name] = client.Lock(f"/bench/kazoo/{name}", uuid.uuid4().hex)
        lock = recipes[name]
        return (lambda: lock.acquire(timeout=30)), lock.release
    return kazoo_lock


#: The two measures the ratios compare, as the ratios say them.
MEASURES = {"uncontended": N_("uncontended"), "contended": N_("contended")}


def bench_zookeeper(*, seconds: float = 3.0, output: Path) -> list[Figures]:
    with servers_of_its_own("lockshop-bench-zk-") as start:
        counter = start(RedisServer, "redis").url
        zookeeper = start(ZooKeeperServer, "zookeeper")
        endpoints = Endpoints(counter, zk_hosts=zookeeper.address)
        figures = measure(endpoints, seconds, uncontended_kinds=(RAW, *OURS, *PEERS),
                          contended_kinds=(*OURS, *PEERS))
        say(_("uncontended, %(kind)s and %(peer)s side by side, in %(turns)s turns…",
              kind="zk_fair", peer=KAZOO, turns=SIDE_BY_SIDE_TURNS))
        fair_by_kazoo = uncontended_side_by_side("zk_fair", KAZOO, endpoints, 2 * seconds)
    def ratios() -> list[str]:
        return [_("%(measure)s vs %(peer)s: %(ratios)s", measure=_(MEASURES[measure]),
                  peer=peer, ratios=join(
                      f"{k} {rate(figures, measure, k) / rate(figures, measure, peer):.2f}x"
                      for k in OURS))
                for measure in MEASURES for peer in PEERS] + [
                _("zk_fair contended vs kazoo Lock, round by round: %(ratios)s",
                  ratios=join(f"{r:.2f}x" for r in round_ratios(
                      figures, "contended", "zk_fair", KAZOO))),
                side_by_side_goal("zk_fair", KAZOO, fair_by_kazoo, at_least=2.5)]

    report("zookeeper locks", figures, output, seconds, ratios, settings={
        "zookeeper": "standalone, Debian package", "tickTime_ms": TICK_MS,
        "forceSync": "yes", "session_timeout_ms": 10_000})
    return figures
