"""The soak's faults: a schedule drawn from a seed, applied one at a time.

Every fault is one the workshop stages by hand, here drawn at random (the
same seed, the same schedule):

* ``partition``: an instance cut off from the lock service's hosts (both
  ways), for up to 5 s, past the 2 s lease or session half the time; and
  from the database's host, where the database is a server on one;
* ``isolate``: the buyers cut off from an instance (their orders time out and
  are retried elsewhere with the same key);
* ``slow``: what an instance sends is delayed (up to 1.2 s, with jitter) and
  some of it lost;
* ``pause``: an instance stopped (SIGSTOP) for up to 4 s, holding its locks;
* ``kill``: an instance killed (SIGKILL), restarted after a while;
* ``restart``: a lock server, or the database's, stopped and started again.

A fault lasts its ``seconds``, then is undone; the next one begins after a
gap. A strategy whose lock is the database, on SQLite, has no server to cut
off or restart: for it, ``partition`` and ``restart`` are not drawn.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lockshop.cluster.launcher import Cluster
from lockshop.cluster.network import Link, Network
from lockshop.cluster.processes import ServerProcess
from shop.i18n import N_, _

KINDS = ("partition", "isolate", "slow", "pause", "kill", "restart")
#: Each kind as the soak's log says it.
FAULT_NAMES = {"partition": N_("partition"), "isolate": N_("isolate"), "slow": N_("slow"),
               "pause": N_("pause"), "kill": N_("kill"), "restart": N_("restart")}
GAP_S = (4.0, 10.0)  # between the end of one fault and the start of the next


@dataclass(frozen=True)
class Fault:
    at_s: float  # after the soak's start
    kind: str
    target: str  # an instance, or a server for "restart"
    seconds: float
    link: Link | None = None  # for "slow"

    def describe(self) -> str:
        extra = ("  " + _("%(delay)s±%(jitter)s ms, %(loss)s%% lost",
                          delay=f"{self.link.delay_ms:.0f}", jitter=f"{self.link.jitter_ms:.0f}",
                          loss=f"{self.link.loss_percent:.1f}") if self.link else "")
        return (f"{self.at_s:6.1f} s  {_(FAULT_NAMES[self.kind]):<9} {self.target:<10} "
                f"{self.seconds:.1f} s{extra}")


def schedule(seed: int, seconds: float, instances: list[str], servers: list[str]) -> list[Fault]:
    """Faults for ``seconds`` of soak, from ``seed``: the same arguments, the same list."""
    rng = random.Random(seed)
    kinds = [k for k in KINDS if servers or k not in ("partition", "restart")]
    faults, at = [], rng.uniform(*GAP_S)
    while True:
        kind = rng.choice(kinds)
        length = {"partition": rng.uniform(1.0, 5.0), "isolate": rng.uniform(2.0, 6.0),
                  "slow": rng.uniform(3.0, 8.0), "pause": rng.uniform(1.0, 4.0),
                  "kill": rng.uniform(1.0, 3.0), "restart": rng.uniform(1.0, 3.0)}[kind]
        if at + length > seconds - 5:  # the last seconds run clean: in-flight orders end
            return faults
        target = rng.choice(servers if kind == "restart" else instances)
        link = None
        if kind == "slow":
            delay = rng.uniform(100, 1200)
            link = Link(delay_ms=round(delay), jitter_ms=round(rng.uniform(0, delay / 4)),
                        loss_percent=round(rng.uniform(0, 3), 1), seed=rng.randrange(1 << 16))
        faults.append(Fault(round(at, 1), kind, target, round(length, 1), link))
        at += length + rng.uniform(*GAP_S)


@dataclass
class Injector:
    """Applies faults to a cluster on hosts, and undoes them."""

    cluster: Cluster
    network: Network
    servers: dict[str, ServerProcess]
    #: The lock service's hosts (empty for the database's own locks).
    lock_hosts: list[str]
    #: Called just before an instance is killed: its holds die with its process.
    before_kill: Callable[[], None] = lambda: None
    #: (instance, the machine's time.time()) of every kill, in order.
    killed: list[tuple[str, float]] = field(default_factory=list)

    def apply(self, fault: Fault) -> None:
        if fault.kind == "partition":
            self.network.partition([fault.target], self.lock_hosts)
        elif fault.kind == "isolate":
            self.network.partition(["machine"], [fault.target], one_way=True)
        elif fault.kind == "slow":
            self.network.slow(fault.target, fault.link)
        elif fault.kind == "pause":
            self.cluster.pause(fault.target)
        elif fault.kind == "kill":
            self.before_kill()
            self.killed.append((fault.target, time.time()))
            self.cluster.kill(fault.target)
        elif fault.kind == "restart":
            self.servers[fault.target].stop()

    def undo(self, fault: Fault) -> None:
        if fault.kind in ("partition", "isolate", "slow"):
            self.network.heal()
        elif fault.kind == "pause":
            self.cluster.resume(fault.target)
        elif fault.kind == "kill":
            self.cluster.restart(fault.target)
        elif fault.kind == "restart":
            self.servers[fault.target].start()

    def run(self, faults: list[Fault], started: float, say) -> None:
        for fault in faults:
            time.sleep(max(0.0, started + fault.at_s - time.monotonic()))
            say(f"    {fault.describe()}")
            self.apply(fault)
            try:
                time.sleep(fault.seconds)
            finally:
                self.undo(fault)
