"""What the control owns: the launcher's parts, and the runs and faults it starts on them."""

from __future__ import annotations

from pathlib import Path

from lockshop.cluster.addresses import reachable_url
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.processes import ServerProcess, process_state
from lockshop.console.control.faults import Faults
from lockshop.console.handbook import Handbook
from lockshop.console.lab_runs import LabRunner
from lockshop.console.live_sales import SaleRunner
from lockshop.console.recent_holds import RecentHolds
from lockshop.console.snapshot import Snapshot
from lockshop.room import Room
from lockshop.room.cgroups import Support
from shop.config import Config


#: How old the state a browser reads may be, in seconds: the page polls once a second.
STATE_EVERY = 0.5


class Control:
    """The launcher's parts, and what may be done to them."""

    def __init__(self, cluster: Cluster, servers: dict[str, ServerProcess], config: Config,
                 runtime: Path, room_code: str | None = None,
                 gradings: int | None = None, room_limits: Support | None = None) -> None:
        self.cluster, self.servers, self.config = cluster, servers, config
        #: What the room's sandbox enforces here (``up`` found out before it started).
        self.room_limits = room_limits
        self.faults = Faults(cluster, servers, config)
        self.labs = LabRunner(runtime / "labs")
        self.sales = SaleRunner(cluster, config.admin_token, runtime / "sales")
        self.handbook = Handbook(runtime)
        self.holds = RecentHolds(cluster)
        #: What every browser polls each second: drawn up once for all of them.
        self._state = Snapshot(self.state_now, STATE_EVERY)
        # Kept in the runtime folder: a restart of ``up`` keeps the code (the room typed
        # it once), the names, the sources, the waiting checks and the board.
        # A room ``up`` opened though its limits did not hold (--room-without-limits)
        # grades without them; any other refuses a grading whose limits cannot be set.
        self.room = Room.open(runtime / "room", code=room_code, workers=gradings,
                              without_limits=bool(room_limits and room_limits.problem))

    def state(self) -> dict:
        """The state as drawn up at most ``STATE_EVERY`` seconds ago."""
        return self._state.get()

    def changed(self) -> dict:
        """The state now, after an action (a fault, a lab or a sale started): its answer,
        and every look after it, shows it."""
        return self._state.renew()

    def state_now(self) -> dict:
        """What the console's cluster panel draws: instances, servers, the lab and sale."""
        lab, sale = self.labs.current(), self.sales.current()
        network = self.cluster.network
        return {
            "instances": [{"name": i.name, "url": reachable_url(i.url), "pid": i.process.pid,
                           "state": process_state(i.process.pid, i.process.poll())}
                          for i in self.cluster.instances],
            "servers": [{"name": name, "state": server_state(server)}
                        for name, server in self.servers.items()],
            "token_required": bool(self.config.admin_token),
            "lab": lab.as_dict() if lab else None,
            "sale": sale.number if sale else None,
            "network": network.as_dict() if network else None,
            # The instructor's page shows it to the room; anyone who can read the
            # console is in the room.
            "room_code": self.room.code,
            # Said to the instructor when the room opened without its cgroup limits.
            "room_limits": self.room_limits.as_dict() if self.room_limits else None,
        }

    def close(self) -> None:
        self.labs.close()
        self.room.close()


def server_state(server: ServerProcess) -> str:
    if server.process is None:
        return "down"
    return process_state(server.process.pid, server.process.poll())
