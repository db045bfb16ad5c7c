"""Hosts on one machine: each instance and server in a network namespace of its own.

On one loopback no instance can be cut off from Redis while the others still
reach it, and that is where distributed locks really fail (Jepsen's lock
workloads are mostly partitions and pauses). So, as root, ``Network`` makes a
small LAN on this machine:

* a bridge in the machine's own namespace, with the first address of a free
  ``10.213.x.0/24``: the launcher, the tests and Locust sit there ("the
  machine"), and reach every host;
* per host, a network namespace joined to the bridge by a veth pair, with its
  own address; its processes start under ``ip netns exec``.

Faults are firewall rules inside the hosts (nftables, a table ``lockshop`` per
namespace), so a cut link loses packets silently, as a real partition does:
a client sees a timeout, never a refusal.

* ``partition(a, b)``: no packet from a host of ``a`` reaches one of ``b``, nor
  back; ``one_way=True`` cuts only a → b (b's packets still arrive at a, and a
  TCP connection, which needs both, stalls all the same);
* ``slow(host, Link(delay_ms, jitter_ms, loss_percent), receivers)``: what the
  host sends (to ``receivers`` only, if given) waits ``delay_ms`` (± ``jitter_ms``,
  in order) and ``loss_percent`` of it is lost, as ``tc netem`` on its
  interface would do; here by NFQUEUE and a small delayer
  (``lockshop.cluster.delayer``), which works on kernels without netem;
* ``heal()``: every link works again, at full speed.

Where it cannot run (not root, no ``ip`` or ``nft``, namespaces forbidden)
``unavailable()`` says why; tests skip with that reason, and fail in CI.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


_PROJECT = Path(__file__).resolve().parents[2]  # where ``-m lockshop…`` is found


class NetworkError(RuntimeError):
    """A namespace, link or rule could not be made."""


@dataclass(frozen=True)
class Link:
    """How a slowed host's link behaves: netem's delay, jitter and loss."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_percent: float = 0.0
    seed: int = 0  # of the jitter: the same seed, the same delays

    def __post_init__(self) -> None:
        if not 0 <= self.delay_ms <= 60_000:
            raise NetworkError("delay_ms must be between 0 and 60000")
        if not 0 <= self.jitter_ms <= self.delay_ms:
            raise NetworkError("jitter_ms must be between 0 and delay_ms")
        if not 0 <= self.loss_percent <= 100:
            raise NetworkError("loss_percent must be between 0 and 100")

    def as_dict(self) -> dict:
        return {"delay_ms": self.delay_ms, "jitter_ms": self.jitter_ms,
                "loss_percent": self.loss_percent}


@dataclass(frozen=True)
class Host:
    """Where a process runs and the address others reach it at."""

    name: str
    address: str = "127.0.0.1"
    #: The network namespace, or None for the machine's own (loopback).
    namespace: str | None = None

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as run on this host."""
        if self.namespace is None:
            return list(argv)
        return ["ip", "netns", "exec", self.namespace, *argv]


#: The machine itself: everything on one loopback, as without a ``Network``.
LOOPBACK = Host("localhost")
#: Where a grading keeps the servers the student's code may reach only through the
#: grader's proxies (its ZooKeeper): on Linux all of 127.0.0.0/8 is loopback, so this is
#: the same machine, and in the room's sandbox a firewall rule refuses the student's
#: user any packet to it (``lockshop.room.sandbox.WALLED``).
BEHIND_PROXIES = Host("behind-proxies", "127.0.0.2")


def unavailable() -> str | None:
    """Why hosts cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool, package in (("ip", "iproute2"), ("nft", "nftables"), ("iptables", "iptables")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install {package})"
    probe = f"lockshop-probe-{secrets.token_hex(3)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@dataclass
class Network:
    """A bridge and hosts on it; a context manager that removes them all on exit."""

    tag: str = field(default_factory=lambda: secrets.token_hex(3))
    hosts: dict[str, Host] = field(default_factory=dict)
    _subnet: ipaddress.IPv4Network | None = None
    #: (from host, to host) pairs whose packets are dropped now.
    cut: set[tuple[str, str]] = field(default_factory=set)
    #: Slowed hosts: name to (how, to whom: empty is everyone).
    slowed: dict[str, tuple[Link, list[str]]] = field(default_factory=dict)
    _delayers: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def bridge(self) -> str:
        return f"lsbr-{self.tag}"

    @property
    def machine(self) -> Host:
        """The machine's own namespace, as the hosts see it: the bridge's address."""
        return Host("machine", str(next(self._subnet.hosts())))

    def start(self) -> Network:
        problem = unavailable()
        if problem:
            raise NetworkError(problem)
        # Two networks started at once (tests run in parallel) would otherwise both
        # find the same subnet free before either had taken it.
        with _machine_wide_lock():
            self._subnet = _free_subnet()
            _ip("link", "add", self.bridge, "type", "bridge")
            _ipv4_only(self.bridge)
            _ip("addr", "add", f"{self.machine.address}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        return self

    def host(self, name: str) -> Host:
        """The host called ``name``, made on first use: a namespace, its link, its address."""
        if name in self.hosts:
            return self.hosts[name]
        number = len(self.hosts) + 2  # .1 is the machine
        host = Host(name, str(self._subnet.network_address + number),
                    f"lockshop-{self.tag}-{name}")
        outside, inside = f"lsv-{self.tag}-{number}", "eth0"
        _ip("netns", "add", host.namespace)
        self.hosts[name] = host  # from here on, close() removes it
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside,
            "netns", host.namespace)
        _ipv4_only(outside)
        _ip("link", "set", outside, "master", self.bridge, "up")
        _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", inside)
        _ip("-n", host.namespace, "link", "set", inside, "up")
        _ip("-n", host.namespace, "link", "set", "lo", "up")
        _nft(host, "add table inet lockshop\n"
                   "add chain inet lockshop input { type filter hook input priority 0; }\n"
                   "add chain inet lockshop output { type filter hook output priority 0; }")
        return host

    # --- faults --------------------------------------------------------------------

    def partition(self, side_a: Iterable[str], side_b: Iterable[str], *,
                  one_way: bool = False) -> None:
        """Cut every link from a host of ``side_a`` to one of ``side_b`` (and back,
        unless ``one_way``). Hosts by name; "machine" is the launcher's side."""
        side_a, side_b = list(side_a), list(side_b)
        pairs = [(a, b) for a in side_a for b in side_b]
        if not one_way:
            pairs += [(b, a) for a, b in pairs]
        if any(receiver == "machine" for _, receiver in pairs):
            # Checked before any rule goes in: a refused partition changes nothing.
            raise NetworkError("links are cut where packets arrive, on the hosts: the "
                               "machine can only be cut one way, from it")
        for sender, receiver in pairs:
            if (sender, receiver) in self.cut:
                continue
            # Dropped where it arrives, silently: the sender sees a timeout.
            _nft(self.hosts[receiver], "add rule inet lockshop input ip saddr "
                 f"{self._address(sender)} drop")
            self.cut.add((sender, receiver))

    def slow(self, name: str, link: Link, receivers: Iterable[str] | None = None) -> None:
        """What host ``name`` sends (to ``receivers`` only, if given; "machine" is one)
        goes as ``link`` says from now on, replacing any earlier slowing of it."""
        if name not in self.hosts:
            raise NetworkError(f"no host {name!r}: only a host's link can be slowed")
        receivers = sorted(set(receivers or ()))
        unknown = [r for r in receivers if r != "machine" and r not in self.hosts]
        if unknown or name in receivers:
            raise NetworkError(f"cannot slow {name} towards {', '.join(unknown or [name])}")
        self._speed_up(name)
        host = self.hosts[name]
        addresses = ",".join(self._address(r) for r in receivers)
        if link.delay_ms or link.jitter_ms:
            # One queue per namespace, so queue 0 everywhere; the delayer listens
            # before the rule goes in, or the first packets would pass undelayed.
            delayer = subprocess.Popen(
                host.command([sys.executable, "-m", "lockshop.cluster.delayer",
                              "--delay-ms", str(link.delay_ms), "--jitter-ms",
                              str(link.jitter_ms), "--seed", str(link.seed)]),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=_PROJECT)
            self._delayers[name] = delayer
            if delayer.stdout.readline().strip() != "ready":
                raise NetworkError(f"delayer on {name}: {delayer.stderr.read().strip()}")
            _run(host.command(["iptables", "-t", "mangle", "-A", "OUTPUT", "-o", "eth0",
                               *(["-d", addresses] if addresses else []),
                               "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass"]),
                 f"iptables on {name}")
        if link.loss_percent:
            # numgen draws per packet: a packet is lost with probability loss/100.
            towards = f"ip daddr {{ {addresses} }} " if addresses else ""
            _nft(host, f'add rule inet lockshop output oifname "eth0" {towards}numgen random '
                 f"mod 10000 < {round(link.loss_percent * 100)} drop")
        self.slowed[name] = (link, receivers)

    def _speed_up(self, name: str) -> None:
        host = self.hosts[name]
        delayer = self._delayers.pop(name, None)
        if delayer is not None:
            _run(host.command(["iptables", "-t", "mangle", "-F", "OUTPUT"]),
                 f"iptables on {name}")
            _stop(delayer)  # after the rule is gone, so no packet waits on it
        _nft(host, "flush chain inet lockshop output")
        self.slowed.pop(name, None)

    def heal(self) -> None:
        """Every link works again, at full speed."""
        for name, host in self.hosts.items():
            _nft(host, "flush chain inet lockshop input")
            if name in self.slowed or name in self._delayers:
                self._speed_up(name)
        self.cut.clear()

    def _address(self, name: str) -> str:
        return self.machine.address if name == "machine" else self.hosts[name].address

    def as_dict(self) -> dict:
        return {"bridge": self.bridge, "machine": self.machine.address,
                "hosts": {name: host.address for name, host in self.hosts.items()},
                "cut": sorted(f"{a} -> {b}" for a, b in self.cut),
                "slow": {name: {**link.as_dict(), "to": receivers or ["all"]}
                         for name, (link, receivers) in sorted(self.slowed.items())}}

    # --- the end ---------------------------------------------------------------------

    def close(self) -> None:
        """Remove every namespace (their processes should be stopped first) and the bridge."""
        for delayer in self._delayers.values():
            _stop(delayer)
        self._delayers.clear()
        for host in self.hosts.values():
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)
        self.hosts.clear()
        if self._subnet is not None:
            subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
            self._subnet = None

    def __enter__(self) -> Network:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc_info) -> None:
        self.close()


@contextmanager
def _machine_wide_lock() -> Iterator[None]:
    """Held by one process of this machine at a time (an flock, freed if it dies)."""
    with open(Path(tempfile.gettempdir()) / "lockshop-network.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield


def _free_subnet() -> ipaddress.IPv4Network:
    """A 10.213.x.0/24 no interface of this machine is in."""
    taken = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    for x in range(1, 255):
        subnet = ipaddress.IPv4Network(f"10.213.{x}.0/24")
        if f" 10.213.{x}." not in taken:
            return subnet
    raise NetworkError("no free 10.213.x.0/24 subnet")


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def _ipv4_only(device: str) -> None:
    """No IPv6 on a device of the machine's own namespace (the LAN is IPv4): else, for
    seconds after it comes up, the kernel adds its link-local address and then sends
    router solicitations, and each change makes a browser on this machine abort every
    request it has in flight (Chromium's ERR_NETWORK_CHANGED), such as the console's
    own script while its page loads."""
    setting = Path(f"/proc/sys/net/ipv6/conf/{device}/disable_ipv6")
    if setting.exists():  # absent where the kernel has no IPv6 at all
        setting.write_text("1")


def _stop(delayer: subprocess.Popen) -> None:
    delayer.terminate()
    delayer.wait()
    delayer.stdout.close()
    delayer.stderr.close()


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise NetworkError(f"{what}: {done.stderr.strip()}")


def _nft(host: Host, script: str) -> None:
    done = subprocess.run(["ip", "netns", "exec", host.namespace, "nft", "-f", "-"],
                          input=script, capture_output=True, text=True)
    if done.returncode != 0:
        raise NetworkError(f"nft on {host.name}: {done.stderr.strip()}")
