"""The lessons' text, read from ``docs/lessons.yml`` for the handbook's lesson pages.

A lesson is one idea the workshop teaches (C01..C50). Its id, title, articles, needs and
time are the lab registry's (``lockshop.workshop.labs.LABS``; the title in Chinese is the
message catalog's). The data file holds the text around it, each in English and Chinese:
the lesson said in full, what each article says and where (a paraphrase under the
article's own section heading, never a quotation), what to watch when the lab runs, the
fix, the modules to read, and, for a lesson no exercise can practise, why not.

A lab added to the registry without its text there fails ``tests/test_docs.py``
(``missing()``): every lab has its lesson, and every article a lab names its paraphrase.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

SOURCE = Path(__file__).resolve().parent.parent / "lessons.yml"
#: What a lesson's record may hold; a key not here is a mistake in the file.
FIELDS = ("claim", "where", "watch", "fix", "read", "no_exercise")


@dataclass(frozen=True)
class Text:
    en: str
    zh: str

    def __call__(self, language: str) -> str:
        return self.zh if language.startswith("zh") else self.en


@dataclass(frozen=True)
class Lesson:
    id: str
    #: The lesson said in full: what happens, and what stops it.
    claim: Text
    #: Per article id: what that article says, in our words, and under which heading.
    where: dict[str, Text]
    #: What to look at while the lab runs (its steps, the console's lock view).
    watch: Text
    fix: Text
    #: The files to read, the lock first.
    read: tuple[str, ...]
    #: Why no exercise can practise it (a measurement, a server's failure, the network);
    #: None for a lesson an exercise practises, or could.
    no_exercise: Text | None = None


def lessons() -> dict[str, Lesson]:
    """Every lesson in the data file, by id: read again when the file changed (``mkdocs
    serve`` keeps the hook loaded from one build to the next)."""
    return _read(SOURCE.stat().st_mtime_ns)


@cache
def _read(version: int) -> dict[str, Lesson]:
    data = yaml.safe_load(SOURCE.read_text(encoding="utf-8"))
    return {lesson_id: _lesson(lesson_id, record) for lesson_id, record in data.items()}


def _lesson(lesson_id: str, record: dict) -> Lesson:
    unknown = set(record) - set(FIELDS)
    if unknown:
        raise ValueError(f"{SOURCE.name}: {lesson_id}: no such field {sorted(unknown)}")
    return Lesson(id=lesson_id, claim=_text(lesson_id, "claim", record.get("claim")),
                  where={article: _text(lesson_id, f"where.{article}", said)
                         for article, said in (record.get("where") or {}).items()},
                  watch=_text(lesson_id, "watch", record.get("watch")),
                  fix=_text(lesson_id, "fix", record.get("fix")),
                  read=tuple(record.get("read") or ()),
                  no_exercise=(_text(lesson_id, "no_exercise", record["no_exercise"])
                               if "no_exercise" in record else None))


def _text(lesson_id: str, field: str, value: object) -> Text:
    if not isinstance(value, dict) or not value.get("en") or not value.get("zh"):
        raise ValueError(f"{SOURCE.name}: {lesson_id}: {field} needs both en and zh")
    return Text(value["en"], value["zh"])


def labs() -> dict:
    """The lab registry, by id (imported late: it brings the whole tooling with it)."""
    from lockshop.workshop.labs import LABS

    return LABS


def page(lab) -> str:
    """The lesson page that holds a lab's lesson in full, from the handbook's root:
    its first article's page, or the page of the lessons beyond the articles."""
    article = lab.articles[0] if lab.articles else "beyond"
    return f"lessons/{article.lower()}.md"


def missing() -> list[str]:
    """What the registry has and the data file does not: a lab with no lesson text, or an
    article a lab names with no paraphrase (or the other way round). Empty when the
    handbook is complete."""
    problems = []
    for lab in labs().values():
        lesson = lessons().get(lab.id)
        if lesson is None:
            problems.append(f"{lab.id} ({lab.name}): no lesson in docs/{SOURCE.name}")
            continue
        for article in lab.articles:
            if article not in lesson.where:
                problems.append(f"{lab.id}: no paraphrase of {article}")
        for article in lesson.where:
            if article not in lab.articles:
                problems.append(f"{lab.id}: a paraphrase of {article}, which the lab does not "
                                "name")
    problems += [f"{lesson_id}: a lesson no lab stages" for lesson_id in lessons()
                 if lesson_id not in labs()]
    return problems
