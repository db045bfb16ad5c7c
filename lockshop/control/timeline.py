"""The holds of every instance side by side, and where two of them overlapped.

Each instance keeps its own record of its holds (``locks.holds``), on the
machine's real-time clock; the launcher keeps the labs' (they run in its
process). Two holds of one lock whose times overlap are two holders at once:
what a lock exists to prevent, drawn in red by the console.
"""

from __future__ import annotations

import os
import time

import locks
from lockshop.cluster.client import ShopClient, ShopClientError

#: The source name of holds taken in the launcher's own process: the labs'.
LABS = "labs"


def collect_holds(instances: dict[str, str], since: float) -> dict:
    """Every instance's holds since ``since`` (by name -> base URL), and the labs'."""
    sources = []
    for name, url in instances.items():
        try:
            own = ShopClient(url, timeout=0.5).get(f"/api/locks/holds?since={since}")
            sources.append({"name": name, "pid": own["pid"], "holds": own["holds"]})
        except ShopClientError as error:
            # A paused instance does not answer: its holds show when it is resumed.
            sources.append({"name": name, "holds": [], "problem": str(error)})
    sources.append({"name": LABS, "pid": os.getpid(),
                    "holds": [h.as_dict() for h in locks.holds.holds(since)]})
    now = time.time()
    return {"now": now, "since": since, "sources": sources, "overlaps": overlaps(sources, now)}


def overlaps(sources: list[dict], now: float) -> list[dict]:
    """Every pair of holds of the same lock whose times overlap, and for how long.

    A hold still open counts as held until ``now``: its holder still believes it."""
    by_lock: dict[str, list[tuple[str, dict]]] = {}
    for source in sources:
        for hold in source["holds"]:
            by_lock.setdefault(hold["lock"], []).append((source["name"], hold))
    found = []
    for lock, holds in by_lock.items():
        holds.sort(key=lambda pair: pair[1]["acquired"])
        for i, (first_source, first) in enumerate(holds):
            first_end = first["released"] or now
            for second_source, second in holds[i + 1:]:
                if second["acquired"] >= first_end:
                    break  # sorted by start: no later hold overlaps this one either
                end = min(first_end, second["released"] or now)
                found.append({"lock": lock, "from": second["acquired"], "to": end,
                              "seconds": round(end - second["acquired"], 4),
                              "holds": [{"source": first_source, "id": first["id"]},
                                        {"source": second_source, "id": second["id"]}]})
    return found
