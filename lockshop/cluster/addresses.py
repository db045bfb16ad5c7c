"""Where others reach what ``lockshop up`` serves: never 0.0.0.0.

A server bound to all interfaces (``--host 0.0.0.0``) listens on every address of the
machine, but "0.0.0.0" is not one anybody can reach it at: a student's laptop needs
the machine's address on the room's network. That is the source address the kernel
would pick for a route out, which a UDP socket's ``connect()`` finds without sending
anything (UDP has no handshake; nothing leaves until a datagram is written).
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit, urlunsplit

#: Addresses that mean "every interface" to bind(), and no host to connect to.
ALL_INTERFACES = frozenset({"0.0.0.0", "::", ""})
#: Where the route is looked up towards: TEST-NET-1 (RFC 5737), reserved for
#: documentation. connect() only asks the routing table; no datagram is sent.
SOME_ADDRESS_OUT = ("192.0.2.1", 9)
LOOPBACK = "127.0.0.1"


def lan_address() -> str:
    """The machine's address on its network, or 127.0.0.1 where it has no route out."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(SOME_ADDRESS_OUT)
        except OSError:
            return LOOPBACK
        address = probe.getsockname()[0]
    return LOOPBACK if address in ALL_INTERFACES else address


def reachable_host(bound: str) -> str:
    """The host others reach a server bound to ``bound`` at."""
    return lan_address() if bound in ALL_INTERFACES else bound


def reachable_url(url: str) -> str:
    """``url`` with a host others can reach (the LAN address for 0.0.0.0)."""
    parts = urlsplit(url)
    if parts.hostname not in ALL_INTERFACES:
        return url
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{reachable_host(parts.hostname)}{port}"))
