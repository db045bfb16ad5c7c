"""Every instance's hold log side by side, and where two holds overlapped.

Each instance keeps its own record of its holds (``locks.hold_log``), on the
machine's real-time clock; the launcher keeps the labs' (they run in its
process). Two holds of one lock whose times overlap are two holders at once:
what a lock exists to prevent, drawn in red by the console, and counted by
the overlap audit (``overlap_audit``) beside the sales figures. An overlap in
which both holders wrote while both held the lock is the harm; one in which
the late holder's write was refused (fencing, or a lost lock noticed before
the commit) is a lock failing safely.
"""

from __future__ import annotations

import os
import time

import locks
from lockshop.cluster.client import ShopClient, ShopClientError

#: The source name of holds taken in the launcher's own process: the labs'.
LABS = "labs"


def collect_holds(instances: dict[str, str], since: float, *, labs: bool = True,
                  timeout: float = 0.5) -> dict:
    """Every instance's holds since ``since`` (by name -> base URL), and the labs'."""
    sources = []
    for name, url in instances.items():
        try:
            own = ShopClient(url, timeout=timeout).get(f"/api/locks/holds?since={since}")
            sources.append({"name": name, "pid": own["pid"], "holds": own["holds"],
                            "forgotten": own.get("forgotten", 0)})
        except ShopClientError as error:
            # A paused instance does not answer: its holds show when it is resumed.
            sources.append({"name": name, "holds": [], "problem": str(error)})
    if labs:
        sources.append({"name": LABS, "pid": os.getpid(),
                        "holds": [h.as_dict() for h in locks.hold_log.since(since)]})
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
                              "both_wrote": _both_wrote(first, second),
                              "interleaved": _interleaved(first, second),
                              "holds": [{"source": first_source, "id": first["id"]},
                                        {"source": second_source, "id": second["id"]}]})
    return found


def _both_wrote(first: dict, second: dict) -> bool:
    """Whether both holders wrote while both held the lock: the second wrote (under its
    hold, so after it was granted), and the first wrote after the second was granted.
    A first holder whose write committed before that, and whose release came late (a
    slow link, a pause after the commit), overlaps in time but wrote alone."""
    if not (first.get("wrote") and second.get("wrote")):
        return False
    wrote_at = first.get("wrote_at")
    return wrote_at is None or wrote_at >= second["acquired"]  # no time: assume the worst


def _interleaved(first: dict, second: dict) -> bool:
    """Whether both wrote and the second had read before the first's write committed:
    both decided on the same stock, and one decision is lost. Where the storage put the
    writes in order instead (the second's fenced read waited for the first's commit and
    saw it), both wrote while both held the lock, but in turn."""
    if not _both_wrote(first, second):
        return False
    wrote_at, read_at = first.get("wrote_at"), second.get("read_at")
    return wrote_at is None or read_at is None or wrote_at > read_at  # unknown: the worst


def begun_since(collected: dict, since: float) -> dict:
    """``collected`` with only the holds acquired at or after ``since``: a run's own holds,
    without those of the run before it that were still ending (a job that began under the
    last strategy's guard)."""
    sources = [dict(source, holds=[h for h in source["holds"] if h["acquired"] >= since])
               for source in collected["sources"]]
    return dict(collected, sources=sources, overlaps=overlaps(sources, collected["now"]))


def overlap_audit(collected: dict, forgotten_before: dict[str, int] | None = None) -> dict:
    """What ``collect_holds`` found, as the audit reports it: per lock, the holds, the
    overlapping pairs, how long they overlapped, and the pairs in which both wrote.

    ``complete`` is false when an instance could not be asked, or its bounded log
    forgot holds since ``forgotten_before`` (each source's ``forgotten`` when the
    run began): then no overlap seen is not no overlap."""
    per_lock: dict[str, dict] = {}
    for source in collected["sources"]:
        for hold in source["holds"]:
            figures = per_lock.setdefault(hold["lock"], {"holds": 0, "overlaps": 0,
                                                         "seconds": 0.0, "both_wrote": 0,
                                                         "interleaved": 0})
            figures["holds"] += 1
    for found in collected["overlaps"]:
        figures = per_lock[found["lock"]]
        figures["overlaps"] += 1
        figures["seconds"] = round(figures["seconds"] + found["seconds"], 4)
        figures["both_wrote"] += found["both_wrote"]
        figures["interleaved"] += found["interleaved"]
    unasked = [s["name"] for s in collected["sources"] if "problem" in s]
    return {"holds": sum(f["holds"] for f in per_lock.values()),
            "overlaps": sum(f["overlaps"] for f in per_lock.values()),
            "seconds": round(sum(f["seconds"] for f in per_lock.values()), 4),
            "both_wrote": sum(f["both_wrote"] for f in per_lock.values()),
            "interleaved": sum(f["interleaved"] for f in per_lock.values()),
            "complete": not unasked and all(
                s.get("forgotten", 0) <= (forgotten_before or {}).get(s["name"], 0)
                for s in collected["sources"]),
            "unasked": unasked, "locks": per_lock}
