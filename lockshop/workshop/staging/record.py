"""What a lab is, and what it leaves behind: one lesson, its steps, one verdict.

The same records are printed by ``lockshop lab`` (as text, or as JSON with
``--json``) and will be shown by the console, so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from shop.i18n import N_

#: The articles, by their ids (the handbook's References page names them in full).
ARTICLES = {
    "A0": N_("分布式锁 (why locks; Redis from SETNX to Lua; ZooKeeper)"),
    "A1": N_("关于分布式锁 (8 SMS from 8 Tomcats; database, Redis, ZooKeeper locks)"),
    "A2": N_("Redis分布式锁唯一标识避免误释放 (a unique token for the release)"),
    "A3": N_("zookeeper实现分布式锁 (two ticket offices, one seat)"),
    "A4": N_("分布式锁用Redis or Zookeeper? (oversold stock; Redlock; watchdog; Curator)"),
}

BROKEN, FIX = "broken", "fix"
#: The one half of a measured lesson: figures side by side, and which way they point.
MEASURE = "measure"


@dataclass
class Step:
    """One thing done, what the article expects of it, and what was seen."""

    half: str  # BROKEN or FIX
    number: int
    action: str
    expected: str
    observed: str
    agrees: bool


@dataclass
class LabRecord:
    id: str
    name: str
    title: str
    articles: tuple[str, ...]
    #: The version each half runs, and how it works ("redis_plain_del: SET NX PX, DEL").
    versions: dict[str, str] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    #: "holds" (both halves behaved as the article says), "does not hold", or "skipped".
    verdict: str = "running"
    #: Why it did not hold, or why it was skipped.
    reason: str = ""
    seconds: float = 0.0

    @property
    def holds(self) -> bool:
        return self.verdict == "holds"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Lab:
    """One lesson of the articles, staged: the broken version, then the fix, same steps."""

    id: str  # "C11"
    name: str  # readable, for the command line: "redis_plain_del"
    title: str
    articles: tuple[str, ...]
    #: What it needs beyond Python: "redis", "zookeeper", "mariadb", "instances".
    needs: tuple[str, ...]
    #: About how long it takes, for ``lockshop lab list``.
    seconds: int
    #: Stages both halves; see ``lockshop.workshop.staging.stage.Stage``.
    stage: Callable
    #: A measured lesson (C23, C34, C43): figures, not a failure and its fix.
    measured: bool = False
