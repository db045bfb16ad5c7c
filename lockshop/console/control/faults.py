"""The faults the instructor's buttons cause: an instance paused, killed, restarted or
cut from ZooKeeper, a server stopped or started, links cut or slowed and healed.

One fault at a time: a restart takes seconds, and a second click must wait.
"""

from __future__ import annotations

import threading

from lockshop.cluster.client import ShopClient, ShopClientError
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.network import Link, NetworkError
from lockshop.cluster.processes import ServerProcess
from lockshop.cluster.zookeeper_sessions import end_session
from lockshop.front_door import Refused
from shop.config import Config
from shop.i18n import lazy_gettext

INSTANCE_ACTIONS = ("pause", "resume", "kill", "restart", "expire-session")
SERVER_ACTIONS = ("stop", "start")


class Faults:
    """What may be done to the launcher's instances, servers and links."""

    def __init__(self, cluster: Cluster, servers: dict[str, ServerProcess],
                 config: Config) -> None:
        self.cluster, self.servers, self.config = cluster, servers, config
        self.network = cluster.network
        self._acting = threading.Lock()

    def act_on_instance(self, name: str, action: str) -> None:
        try:
            self.cluster.instance(name)
        except KeyError:
            raise Refused(404, lazy_gettext("no instance named %(name)r", name=name)) from None
        if action not in INSTANCE_ACTIONS:
            raise Refused(404, lazy_gettext("no action %(action)r; choose from %(actions)s",
                                            action=action, actions=", ".join(INSTANCE_ACTIONS)))
        with self._acting:
            if action == "expire-session":
                self._expire_sessions(name)
            else:
                getattr(self.cluster, action)(name)

    def act_on_server(self, name: str, action: str) -> None:
        server = self.servers.get(name)
        if server is None:
            raise Refused(404, lazy_gettext("no server named %(name)r; this launcher started "
                                            "%(servers)s", name=name,
                                            servers=", ".join(self.servers) or "none"))
        if action not in SERVER_ACTIONS:
            raise Refused(404, lazy_gettext("no action %(action)r; choose from %(actions)s",
                                            action=action, actions=", ".join(SERVER_ACTIONS)))
        with self._acting:
            if action == "stop":
                server.stop()
            elif server.process is None:
                server.start()

    def partition(self, side_a: object, side_b: object, one_way: object = False) -> None:
        """Cut the links from the hosts of ``side_a`` to those of ``side_b`` (and back)."""
        if self.network is None:
            raise Refused(409, lazy_gettext("this cluster runs on one loopback: start it with "
                                            "'lockshop up --hosts' to cut links"))
        for side in (side_a, side_b):
            if (not isinstance(side, list) or not side
                    or not all(isinstance(h, str) for h in side)):
                raise Refused(400, lazy_gettext(
                        "'from' and 'to' must be non-empty lists of host names"))
            self._refuse_unknown(set(side) - {"machine"})
        if set(side_a) & set(side_b):
            raise Refused(422, lazy_gettext("a host cannot be cut off from itself"))
        if not isinstance(one_way, bool):
            raise Refused(400, lazy_gettext("'one_way' must be true or false"))
        if "machine" in side_b or ("machine" in side_a and not one_way):
            raise Refused(422, lazy_gettext(
                    "the machine's side can only be cut one way, from it: "
                    "'from': ['machine'], 'one_way': true"))
        with self._acting:
            self.network.partition(side_a, side_b, one_way=one_way)

    def slow(self, body: dict) -> None:
        """Slow what one host sends (to ``to`` only, if given): delay, jitter, loss."""
        if self.network is None:
            raise Refused(409, lazy_gettext("this cluster runs on one loopback: start it with "
                                            "'lockshop up --hosts' to slow links"))
        host, receivers = body.get("host"), body.get("to")
        if not isinstance(host, str):
            raise Refused(400, lazy_gettext("'host' must be the name of a host"))
        if receivers is not None and (not isinstance(receivers, list) or not receivers or
                                      not all(isinstance(r, str) for r in receivers)):
            raise Refused(400, lazy_gettext(
                    "'to' must be a non-empty list of host names, or absent"))
        if host == "machine":
            raise Refused(422, lazy_gettext(
                    "only a host's link can be slowed, not the machine's"))
        self._refuse_unknown({host, *(receivers or ())} - {"machine"})
        figures = {}
        for name in ("delay_ms", "jitter_ms", "loss_percent"):
            value = body.get(name, 0)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise Refused(400, lazy_gettext("'%(name)s' must be a number", name=name))
            figures[name] = value
        try:
            link = Link(**figures)
            with self._acting:
                self.network.slow(host, link, receivers)
        except NetworkError as error:
            raise Refused(422, str(error)) from None

    def heal(self) -> None:
        if self.network is None:
            raise Refused(409, lazy_gettext(
                    "this cluster runs on one loopback: nothing to heal"))
        with self._acting:
            self.network.heal()

    def _refuse_unknown(self, names: set[str]) -> None:
        unknown = sorted(names - set(self.network.hosts))
        if unknown:
            raise Refused(422, lazy_gettext(
                    "no host named %(unknown)s; the hosts are %(hosts)s and "
                    "machine", unknown=", ".join(unknown),
                    hosts=", ".join(sorted(self.network.hosts))))

    def _expire_sessions(self, name: str) -> None:
        if not self.config.zk_hosts:
            raise Refused(409, lazy_gettext("this cluster has no ZooKeeper"))
        client = ShopClient(self.cluster.instance(name).url, self.config.admin_token, timeout=5)
        try:
            sessions = client.get("/api/admin/zookeeper-sessions")["sessions"]
        except ShopClientError as error:
            raise Refused(503, lazy_gettext(
                    "%(name)s did not say its sessions: %(error)s", name=name,
                    error=error)) from None
        if not sessions:
            raise Refused(409, lazy_gettext("%(name)s has no ZooKeeper session open yet (no "
                                            "ZooKeeper strategy or leader election used)",
                                            name=name))
        for session in sessions:
            end_session(int(session["session_id"], 16), bytes.fromhex(session["password"]),
                        self.config.zk_hosts)
