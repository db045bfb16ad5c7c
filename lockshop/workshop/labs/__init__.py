"""``lockshop lab``: the articles' lessons, staged on demand.

Each lab is one lesson of the workshop's articles (ids C01..C43; the
handbook's Lessons pages). It stages the broken version on real parts (Redis and ZooKeeper
servers of its own, shop instances, a database), printing each step with
what the article expects next to what it observed, then runs the same steps
on the fix, and ends with one verdict. Races are forced by the business
delay, pauses, kills, fault hooks and barriers, never left to luck: a lab
holds every time or it is broken.
"""

from __future__ import annotations

from lockshop.workshop.labs import (
    failover,
    handoff,
    hold_lengths,
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
from lockshop.workshop.staging.record import ARTICLES, Lab, LabRecord
from shop.i18n import N_, _, join

LABS: dict[str, Lab] = {lab.id: lab for lab in sorted(
    (*sales.LABS, *jobs.LABS, *hold_lengths.LABS, *redis_leases.LABS, *reentrancy.LABS,
     *redis_majority.LABS, *failover.LABS, *zookeeper.LABS, *zk_queues.LABS, *mariadb.LABS,
     *measured.LABS, *retries.LABS,
     *partitions.LABS, *latency.LABS, *leader_partition.LABS, *handoff.LABS),
    key=lambda lab: int(lab.id[1:]))}
#: How many lessons the articles make (A0..A4); labs from C44 on stage what the
#: articles leave out (faults of the network, clients that retry).
ARTICLES_LESSONS = 43
#: What a lab needs beyond Python (``Lab.needs``), as the lab list says it.
NEEDS = {"redis": N_("Redis"), "zookeeper": N_("ZooKeeper"), "mariadb": N_("MariaDB"),
         "instances": N_("shop instances"), "hosts": N_("hosts of their own (root)")}


def find(name: str) -> Lab:
    """A lab by its id ("C11", "c11") or its readable name ("redis_plain_del")."""
    for lab in LABS.values():
        if name.upper() == lab.id or name == lab.name:
            return lab
    raise KeyError(name)


def of_article(article: str) -> list[Lab]:
    return [lab for lab in LABS.values() if article.upper() in lab.articles]


def by_article() -> list[tuple[str, str, list[Lab]]]:
    """(article, what it is in the reader's language, its labs) for every article with
    labs, then the labs of no article as "--". A lab of two articles is under both."""
    groups = [(key, _("%(title)s (%(about)s)", title=article.title, about=_(article.about)),
               of_article(key)) for key, article in ARTICLES.items()]
    groups.append(("--", _("beyond the articles"),
                   [lab for lab in LABS.values() if not lab.articles]))
    return [group for group in groups if group[2]]


def listing() -> str:
    """The labs by article, with id, title and about how long each takes, in the reader's
    language."""
    lines = []
    for article, title, labs in by_article():
        lines.append(f"{article}  {title}" if article != "--" else title)
        for lab in labs:
            needs = ("  " + _("[needs %(parts)s]", parts=join(
                _(NEEDS[part]) if part in NEEDS else part for part in lab.needs))
                if lab.needs else "")
            lines.append(f"  {lab.id:<4} {lab.name:<22} ~{lab.seconds:>2} s  "
                         f"{_(lab.title)}{needs}")
        lines.append("")
    of_articles = [i for i in LABS if int(i[1:]) <= ARTICLES_LESSONS]
    beyond = len(LABS) - len(of_articles)
    missing = [f"C{n:02d}" for n in range(1, ARTICLES_LESSONS + 1) if f"C{n:02d}" not in LABS]
    total = sum(lab.seconds for lab in LABS.values())
    line = _("%(staged)s of the articles' %(lessons)s lessons are staged as labs",
             staged=len(of_articles), lessons=ARTICLES_LESSONS)
    if beyond:
        line += _(", and %(beyond)s beyond them", beyond=beyond)
    line += _(" (about %(seconds)s s for all)", seconds=total)
    if missing:
        line += _("; not yet: %(labs)s", labs=", ".join(missing))
    lines.append(line)
    return "\n".join(lines)


__all__ = ["ARTICLES", "LABS", "Lab", "LabRecord", "by_article", "find", "listing",
           "of_article"]
