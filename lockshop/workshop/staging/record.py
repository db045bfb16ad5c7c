"""What a lab is, and what it leaves behind: one lesson, its steps, one verdict.

The same records are printed by ``lockshop lab`` (as text, or as JSON with
``--json``) and will be shown by the console, so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from shop.i18n import N_

@dataclass(frozen=True)
class Article:
    """One of the five articles the workshop is built on (the References page cites them
    in full)."""

    #: As published, in Chinese: never translated.
    title: str
    #: Its author or site as published, or (N_) what it is when it is unsigned.
    by: str
    #: Its date, "" when it gives none.
    date: str
    #: What it covers, in a line (N_: said in the reader's language).
    about: str


#: The articles, by their ids: the one list of them (the lab list, the handbook).
ARTICLES = {
    "A0": Article("分布式锁", "当年明月123", "2020-01-07",
                  N_("why a lock; an expired-order cleanup job; Redis from SETNX to a "
                     "reentrant hash in Lua; ZooKeeper's sequential nodes")),
    "A1": Article("关于分布式锁", "kongzheng1993", "2019-06-11",
                  N_("eight Tomcats send eight text messages; database, Redis and ZooKeeper "
                     "locks; Redlock; the herd effect; Quartz's cluster")),
    "A2": Article("Redis分布式锁唯一标识避免误释放的案例分析", "摩柯社区", "2021-05-28",
                  N_("a unique token so that no client releases another's lock; WATCH/MULTI "
                     "for the release; how long a lease should be")),
    "A3": Article("Zookeeper 实现分布式锁", N_("a GitHub markdown note"), "",
                  N_("two ticket offices sell one seat; ZooKeeper's simple lock, the "
                     "sequential lock and the read/write lock")),
    "A4": Article("分布式锁用Redis or Zookeeper?", "", "2020-03-19",
                  N_("oversold stock; SET NX PX and a Lua release; Redlock; Redisson's "
                     "watchdog; ZooKeeper with Curator; Redis against ZooKeeper")),
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
