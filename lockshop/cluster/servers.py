"""The servers a run starts for itself where none is configured: one Redis for the
single-server locks, five independent ones for Redlock, a standalone ZooKeeper.

They are kept by name, so that whoever started them (``lockshop up``'s
console, a lab) can stop and start them again as a fault. Given a
``Network``, each runs on a host of its own, named as the server is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from lockshop.cluster.network import LOOPBACK, Network
from lockshop.cluster.processes import ServerProcess
from lockshop.cluster.redis_servers import RedisServer, redis_server_binary
from lockshop.cluster.zookeeper_servers import ZooKeeperServer, zookeeper_installed
from shop.config import Config

#: Independent servers started for Redlock when none are configured.
REDLOCK_SERVERS = 5


@dataclass
class OwnServers:
    """The configuration that points at the servers, and the servers we started, by name
    ("redis", "redlock-1".."redlock-5", "zookeeper")."""

    config: Config
    started: dict[str, ServerProcess] = field(default_factory=dict)


@contextmanager
def own_servers(config: Config, runtime: Path,
                network: Network | None = None) -> Iterator[OwnServers]:
    """Start servers of our own where no address is configured and the server is
    installed; stop them on the way out."""
    def host(name: str):
        return network.host(name) if network is not None else LOOPBACK

    with ExitStack() as stack:
        servers = OwnServers(config)

        def start(server: ServerProcess) -> ServerProcess:
            servers.started[server.name] = stack.enter_context(server)
            return server

        if redis_server_binary() is not None:
            if not config.redis_url:
                config = replace(config, redis_url=start(RedisServer(
                    runtime / "servers", "redis", host=host("redis"))).url)
            if not config.redis_urls:
                urls = tuple(start(RedisServer(runtime / "servers", f"redlock-{n}",
                                               host=host(f"redlock-{n}"))).url
                             for n in range(1, REDLOCK_SERVERS + 1))
                config = replace(config, redis_urls=urls)
        if zookeeper_installed() and not config.zk_hosts:
            zookeeper = start(ZooKeeperServer(runtime / "servers", "zookeeper",
                                              host=host("zookeeper")))
            config = replace(config, zk_hosts=zookeeper.address)
        servers.config = config
        yield servers
