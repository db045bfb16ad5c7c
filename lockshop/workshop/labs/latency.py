"""A lab of a slow network (beyond the articles, after A4's watchdog): latency on the
link to Redis makes a watchdog renewal miss while the holder is alive and well.

The watchdog (A4, Redisson) renews a short lease every third of it, and waits
for each answer before it waits again. So a renewal lands (round trip +
lease/3) after the one before, and the lease survives only while that stays
under the lease. Here the lease is 1 s and Redis's answers to A take 900 ms:
renewals land 1.23 s apart, and the lease ends between two of them. B, whose
link is fast, takes the lock and sells; A, still inside its critical section,
is no longer the holder. Trusting the watchdog, A's write overwrites B's sale;
asking before it commits, A learns LockLost (its watchdog saw the renewal
fail), and its fencing token is refused all the same.

Forced, never left to luck: A is shown to still hold the lock at one and a
half leases (the watchdog works), then the link is slowed for two and a half
leases, far past the 0.23 s the lease misses by, before B asks.
"""

from __future__ import annotations

import time

from lockshop.cluster.network import Link
from lockshop.cluster.redis_servers import RedisServer
from lockshop.workshop.labs.partitions import LEASE_MS, check_from_a, stage_late_write
from lockshop.workshop.staging.record import Lab
from lockshop.workshop.staging import steps
from shop.i18n import N_, _

LATENCY_MS = 900  # over lease - lease/3 = 667 ms: the renewals cannot keep up


def slowed(lan, service: str, lock) -> tuple[str, str, bool]:
    """Redis's answers to A slow down while A's watchdog renews its lease."""
    time.sleep(LEASE_MS * 1.5 / 1000)
    renewed = check_from_a(lock)  # past the first lease: held only thanks to the watchdog
    lan.slow(service, Link(delay_ms=LATENCY_MS), receivers=["machine"])
    time.sleep(LEASE_MS * 2.5 / 1000)
    return (_("its watchdog renews the %(lease)s ms lease every %(every)s ms (after "
              "%(after)s ms A asks: %(renewed)s); then %(service)s's answers to A take "
              "%(latency)s ms, so renewals land %(apart)s ms apart", lease=LEASE_MS,
              every=LEASE_MS // 3, after=f"{LEASE_MS * 1.5:g}", renewed=steps.said(renewed),
              service=service, latency=LATENCY_MS, apart=LATENCY_MS + LEASE_MS // 3),
            _("a renewal lands after the lease has ended: A's watchdog saw it fail, so A "
              "learns LockLost"), renewed == "still held")


def stage_watchdog_latency(run) -> None:
    lan = run.parts.network()
    with RedisServer(run.parts.folder("servers"), "redis", host=lan.host("redis")) as server:
        stage_late_write(run, "redis", server, "redis_watchdog", fault=slowed,
                         fix=_("A asks before it commits (its watchdog knows: LockLost), "
                               "and its write carries the lock's fencing token"))


LABS = (
    Lab("C47", "watchdog_latency", N_("Latency on the link to Redis makes a watchdog renewal "
        "miss while the holder lives (A4's watchdog); asking before the commit, and fencing, "
        "catch it"),
        (), ("redis", "hosts"), 12, stage_watchdog_latency),
)
