"""``lockshop lab``: the articles' lessons, staged on demand.

Each lab is one claim of the workshop's articles (ids C01..C43, as in
CLAIMS.md). It stages the broken version on real parts (Redis and ZooKeeper
servers of its own, shop instances, a database), printing each step with
what the article expects next to what it observed, then runs the same steps
on the fix, and ends with one verdict. Races are forced by the business
delay, pauses, kills, fault hooks and barriers, never left to luck: a lab
holds every time or it is broken.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from lockshop.workshop.labs import (
    failover,
    holds,
    jobs,
    latency,
    leader_partition,
    mariadb,
    measured,
    partitions,
    redis_leases,
    redis_majority,
    reentrancy,
    retries,
    sales,
    zk_queues,
    zookeeper,
)
from lockshop.workshop.labs.record import ARTICLES, Lab, LabRecord, Step
from lockshop.workshop.labs.stage import Parts, running

LABS: dict[str, Lab] = {lab.id: lab for lab in sorted(
    (*sales.LABS, *jobs.LABS, *holds.LABS, *redis_leases.LABS, *reentrancy.LABS,
     *redis_majority.LABS, *failover.LABS, *zookeeper.LABS, *zk_queues.LABS, *mariadb.LABS,
     *measured.LABS, *retries.LABS,
     *partitions.LABS, *latency.LABS, *leader_partition.LABS),
    key=lambda lab: int(lab.id[1:]))}
#: How many claims the articles make (CLAIMS.md); labs from C44 on stage what the
#: articles leave out (faults of the network, clients that retry).
CLAIMS = 43


def find(name: str) -> Lab:
    """A lab by its id ("C11", "c11") or its readable name ("redis_plain_del")."""
    for lab in LABS.values():
        if name.upper() == lab.id or name == lab.name:
            return lab
    raise KeyError(name)


def of_article(article: str) -> list[Lab]:
    return [lab for lab in LABS.values() if article.upper() in lab.articles]


def run_labs(labs: Iterable[Lab], *, as_json: bool = False, out=None,
             parts: Parts | None = None) -> list[LabRecord]:
    """Stage ``labs`` one after the other on shared parts (``parts``, or servers of
    their own, stopped at the end); print as they go."""
    out = out or sys.stdout
    if parts is not None:
        return [_run_one(lab, parts, as_json, out) for lab in labs]
    runtime = Path(tempfile.mkdtemp(prefix="lockshop-labs-"))
    try:
        with Parts(runtime) as own_parts:
            return [_run_one(lab, own_parts, as_json, out) for lab in labs]
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def run_lab(name: str) -> bool:
    """Stage one lab, printed as text; whether it held."""
    return run_labs([find(name)])[0].holds


def _run_one(lab: Lab, parts: Parts, as_json: bool, out) -> LabRecord:
    def say(text: str) -> None:
        if not as_json:
            print(text, file=out, flush=True)

    def on_half(half: str, version: str) -> None:
        say(f"  {half}: {version}")

    def on_step(record: LabRecord, step: Step) -> None:
        say(f"    {step.number}. {step.action}")
        say(f"       expected: {step.expected} · observed: {step.observed}  "
            f"{'✓' if step.agrees else '✗ DIFFERS'}")

    say(f"{lab.id} {lab.name}: {lab.title}  ({', '.join(lab.articles)})")
    with running(lab, parts, on_step, on_half) as run:
        lab.stage(run)
    record = run.record
    if as_json:
        print(json.dumps(record.as_dict(), ensure_ascii=False), file=out, flush=True)
    elif record.holds and lab.measured:
        say(f"  => holds ({record.seconds:g} s): the figures point the article's way\n")
    elif record.holds:
        say(f"  => holds ({record.seconds:g} s): the broken version failed as the article "
            "says, and the fix held under the same steps\n")
    elif record.verdict == "skipped":
        say(f"  => SKIPPED: {record.reason}\n")
    else:
        say(f"  => DOES NOT HOLD ({record.seconds:g} s): {record.reason}\n")
    return record


def by_article() -> list[tuple[str, str, list[Lab]]]:
    """(article, its title, its labs) for every article with labs, then the labs of no
    article as "--". A lab of two articles is under both."""
    groups = [(article, title, of_article(article)) for article, title in ARTICLES.items()]
    groups.append(("--", "beyond the articles",
                   [lab for lab in LABS.values() if not lab.articles]))
    return [group for group in groups if group[2]]


def listing() -> str:
    """The labs by article, with id, title and about how long each takes."""
    lines = []
    for article, title, labs in by_article():
        lines.append(f"{article}  {title}")
        for lab in labs:
            needs = f"  [needs {', '.join(lab.needs)}]" if lab.needs else ""
            lines.append(f"  {lab.id:<4} {lab.name:<22} ~{lab.seconds:>2} s  {lab.title}{needs}")
        lines.append("")
    of_claims = [i for i in LABS if int(i[1:]) <= CLAIMS]
    beyond = len(LABS) - len(of_claims)
    missing = [f"C{n:02d}" for n in range(1, CLAIMS + 1) if f"C{n:02d}" not in LABS]
    lines.append(f"{len(of_claims)} of the articles' {CLAIMS} claims are staged as labs"
                 + (f", and {beyond} beyond them" if beyond else "")
                 + f" (about {sum(lab.seconds for lab in LABS.values())} s for all)"
                 + (f"; not yet: {', '.join(missing)}" if missing else ""))
    return "\n".join(lines)


__all__ = ["ARTICLES", "LABS", "Lab", "LabRecord", "by_article", "find", "listing", "of_article",
           "run_lab", "run_labs"]
