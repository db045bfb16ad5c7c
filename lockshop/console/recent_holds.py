"""The holds the console's lock view draws: every instance's, over its last minute or so.

The page asks every second for the holds since a moment of its own (its window: 10,
30 or 60 seconds back). One snapshot of the last ``WIDEST`` seconds, taken at most
once per ``EVERY`` seconds, answers them all, each narrowed to the whole second
before what it asked, and each such answer is encoded once per snapshot: during a
sale the holds of a minute are a megabyte of JSON, and thirty browsers asking for it
every second kept the control's two cores busy encoding. Only a question further
back is asked of the instances afresh.
"""

from __future__ import annotations

import json
import math
import threading
import time

from lockshop.cluster.hold_logs import collect_holds
from lockshop.cluster.launcher import Cluster
from lockshop.console.snapshot import Snapshot

#: The page's widest window is 60 s; the rest is slack for a slow tick. (No wider:
#: without a lock, every hold of a sale overlaps many others, and the overlaps of a
#: window grow with its square.)
WIDEST = 65.0
EVERY = 1.0


class RecentHolds:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._snapshot = Snapshot(lambda: self._collect(time.time() - WIDEST), EVERY)
        self._guard = threading.Lock()
        self._answers_of: dict | None = None  # the snapshot the answers below were made of
        self._answers: dict[int, bytes] = {}

    def since(self, since: float) -> bytes:
        """As ``collect_holds``, in JSON: every source's holds open or ended since
        ``since`` (or up to a second before it), and the overlaps among them."""
        snapshot = self._snapshot.get()
        if since < snapshot["since"]:
            return encoded(self._collect(since))
        second = math.floor(since)
        with self._guard:
            if self._answers_of is not snapshot:
                self._answers_of, self._answers = snapshot, {}
            answer = self._answers.get(second)
        if answer is None:
            answer = encoded(narrowed(snapshot, second))
            with self._guard:
                if self._answers_of is snapshot:
                    self._answers[second] = answer
        return answer

    def _collect(self, since: float) -> dict:
        return collect_holds({i.name: i.url for i in self.cluster.instances}, since)


def narrowed(holds: dict, since: float) -> dict:
    """``holds`` (from ``collect_holds``) as if collected since ``since`` (later): the same
    rule as the hold log's (open, or ended at or after it), and the overlaps whose two
    holds are both still in (an overlap is found pair by pair: the others do not change
    it)."""
    sources, kept = [], set()
    for source in holds["sources"]:
        recent = [h for h in source["holds"] if h["released"] is None or h["released"] >= since]
        kept.update((source["name"], h["id"]) for h in recent)
        sources.append({**source, "holds": recent})
    overlaps = [o for o in holds["overlaps"]
                if all((h["source"], h["id"]) in kept for h in o["holds"])]
    return {**holds, "since": since, "sources": sources, "overlaps": overlaps}


def encoded(holds: dict) -> bytes:
    return json.dumps(holds, separators=(",", ":")).encode()
