"""Labs run from the console: one at a time, in a thread of the launcher, on servers
of their own, with their steps readable while they happen.

They are the same labs, with the same records, as ``lockshop lab --json``.
"""

from __future__ import annotations

import copy
import logging
import threading
from pathlib import Path

import locks

from lockshop.cluster.redis_servers import redis_server_binary
from lockshop.cluster.zookeeper_servers import zookeeper_installed
from lockshop.front_door import Refused
from lockshop.console.runner import Runner
from lockshop.workshop import labs
from lockshop.workshop.staging.record import Lab, LabRecord, Step
from lockshop.workshop.staging.stage import Parts, running
from shop.i18n import N_, _, current_language, language, lazy_gettext


def missing_parts(lab: Lab) -> str | None:
    """What this machine lacks for ``lab`` (MariaDB is found out by the lab itself)."""
    if "redis" in lab.needs and redis_server_binary() is None:
        return "redis-server is not installed"
    if "zookeeper" in lab.needs and not zookeeper_installed():
        return "ZooKeeper is not installed"
    return None


def listing() -> list[dict]:
    """Every lab, grouped by the article it stages, as the console lists them."""
    return [{"article": article, "title": _(title),
             "labs": [{"id": lab.id, "name": lab.name, "title": _(lab.title),
                       "needs": list(lab.needs), "seconds": lab.seconds,
                       "measured": lab.measured, "missing": missing_parts(lab)}
                      for lab in group]}
            for article, title, group in labs.by_article()]


class LabRun:
    """One run of one lab: its record, growing step by step."""

    def __init__(self, number: int, lab: Lab) -> None:
        self.number, self.lab = number, lab
        self.record = LabRecord(lab.id, lab.name, lab.title, lab.articles)
        self.done = False
        self._guard = threading.Lock()

    @property
    def running(self) -> bool:
        return not self.done

    def as_dict(self) -> dict:
        with self._guard:
            return {"run": self.number, "lab": self.lab.id, "done": self.done,
                    "record": copy.deepcopy(self.record.as_dict())}

    def on_step(self, record: LabRecord, step: Step | None = None) -> None:
        with self._guard:
            self.record = record

    def finished(self, record: LabRecord) -> None:
        with self._guard:
            self.record, self.done = record, True


class LabRunner(Runner[LabRun]):
    """Starts labs in the background, one at a time, and keeps every run's record."""

    kind = N_("lab run")

    def __init__(self, runtime: Path) -> None:
        super().__init__()
        self.runtime = runtime
        self._parts: Parts | None = None

    def start(self, name: str) -> LabRun:
        """Stage lab ``name``; a 404 for no such lab, a 409 while another runs."""
        try:
            lab = labs.find(name)
        except KeyError:
            raise Refused(404, lazy_gettext("no lab named %(name)r", name=name)) from None
        # Its steps are written in the language of whoever started it: the thread has
        # no request to ask.
        return self._start(lambda number: LabRun(number, lab), current_language())

    def _busy(self, running: LabRun) -> object:
        return lazy_gettext("lab %(id)s is still running", id=running.lab.id)

    def close(self) -> None:
        if self._parts is not None:
            self._parts.close()

    def _work(self, run: LabRun, reader: str) -> None:
        with language(reader):
            self._stage_in_language(run)

    def _stage_in_language(self, run: LabRun) -> None:
        # A lab drops connections and kills servers on purpose: the warnings would
        # drown the launcher's own output.
        logging.getLogger("kazoo").setLevel(logging.CRITICAL)
        logging.getLogger("locks").setLevel(logging.ERROR)
        if self._parts is None:
            self._parts = Parts(self.runtime)
        problem = missing_parts(run.lab)
        with running(run.lab, self._parts, run.on_step, lambda half, version: None) as staged:
            run.on_step(staged.record)  # its steps show as they are checked
            if problem:
                staged.skip(problem)
            run.lab.stage(staged)
        # Its locks were dropped with their factories: what it left held ends here.
        locks.hold_log.close_open(f"left held when lab {run.lab.id} ended")
        run.finished(staged.record)
