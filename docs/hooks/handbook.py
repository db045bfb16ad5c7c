"""MkDocs hook: the handbook's pages that come from the project's own records.

- The lesson pages (one per article, one for the lessons beyond them, and an index) are
  written here from the lab registry (id, name, title, articles, needs, time), the
  articles' list (``lockshop.workshop.staging.record.ARTICLES``), the lessons' text
  (``docs/lessons.yml``, read by ``lesson_text.py`` beside this file) and the exercises
  (``lockshop.exercises``: each exercise names the lessons its checks grade, and a lesson's
  entry names the exercises that practise it). A lab added is a lesson added, and an
  article a lab names is a page added to the navigation. They are written as files into
  docs/lessons/ (ignored by git) before MkDocs collects its files, because the i18n plugin
  pairs a page with its translation by their files on disk; a file is rewritten only when
  its text changed, so that ``mkdocs serve`` does not rebuild for ever.
- Hand-written pages hold markers, ``<!-- generated: NAME -->``, replaced by a table from
  a record: the glossary (docs/glossary.yml), the exercises, the strategies, the labs'
  times.
- Every word the generated pages add around those records is the message catalog's
  (``_()``, said in the page's language), as the lab list's and the console's are.
- The glossary's Chinese words are given to jieba, which the search plugin uses to cut
  Chinese text into words, so that a search for 羊群效应 finds the page that says it.

The Chinese page of ``x.md`` is ``x.zh.md`` (mkdocs-static-i18n's suffix layout). Links in
a generated page name the English file; the i18n plugin sends a Chinese page's links to
the Chinese page.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

import yaml
from mkdocs.plugins import event_priority

import lesson_text  # beside this file: MkDocs puts the hook's folder on the path
from lockshop.workshop.staging.record import ARTICLES
from shop.i18n import CHINESE, ENGLISH, _, join
from shop.i18n import language as in_language

DOCS = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"<!--\s*generated:\s*([\w-]+)\s*-->")
#: The handbook's languages (its files' suffixes) and the catalog's for each.
CATALOG_LANGUAGE = {"en": ENGLISH, "zh": CHINESE}

#: The labs' times on the 2-core development machine, measured with
#: ``time .venv/bin/lockshop lab ID`` on 2026-11-24 (wall clock, the lab run starting and
#: stopping its own servers; load average about 2.5); the rest are the registry's estimates.
MEASURED = {"C01": 2.3, "C09": 11.8, "C11": 2.6, "C14": 4.9, "C18": 8.7, "C19": 4.2}


# --- MkDocs events -------------------------------------------------------------------------

def on_config(config, **kwargs):
    """Lesson pages written and put in the navigation; the glossary's words into jieba's
    dictionary."""
    _write_lesson_pages(Path(config.docs_dir) / "lessons")
    _put_lessons_in(config.nav or [])
    try:
        import jieba
    except ImportError:  # search still works, with Chinese cut less well
        return config
    for entry in _glossary():
        for word in re.findall(r"[\u4e00-\u9fff]+", f"{entry.get('zh', '')} "
                                                   f"{entry.get('article', '')}"):
            jieba.add_word(word)
    return config


def _put_lessons_in(nav: list) -> None:
    """The navigation's "Lessons" section, wherever it is: the index, then a page per
    article that has lessons."""
    for item in nav:
        if not isinstance(item, dict):
            continue
        for title, value in item.items():
            if title == "Lessons":
                item[title] = ["lessons/index.md", *(f"lessons/{key.lower()}.md"
                                                     for key in _article_keys())]
            elif isinstance(value, list):
                _put_lessons_in(value)


def _write_lesson_pages(folder: Path) -> None:
    pages = {}
    for language in ("en", "zh"):
        suffix = "" if language == "en" else ".zh"
        with in_language(CATALOG_LANGUAGE[language]):
            pages[f"index{suffix}.md"] = _lesson_index(language)
            for key in _article_keys():
                pages[f"{key.lower()}{suffix}.md"] = _article_page(key, language)
    folder.mkdir(exist_ok=True)
    for stale in set(p.name for p in folder.glob("*.md")) - set(pages):
        (folder / stale).unlink(missing_ok=True)
    for name, text in pages.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            # Whole or not at all: two builds may run at once (the tests run in
            # parallel), and one must never read the other's half-written page.
            partial = path.with_name(f".{name}.{os.getpid()}")
            partial.write_text(text, encoding="utf-8")
            os.replace(partial, path)


def on_page_markdown(markdown, page, config, files, **kwargs):
    language = "zh" if page.file.src_uri.endswith(".zh.md") else "en"
    here = posixpath.dirname(page.file.src_uri)

    def render(match):
        name = match.group(1)
        if name not in TABLES:
            raise ValueError(f"{page.file.src_uri}: no generated table {name!r}")
        return TABLES[name](language, here)

    with in_language(CATALOG_LANGUAGE[language]):
        markdown = MARKER.sub(render, markdown)
    return _join_chinese_lines(markdown) if language == "zh" else markdown


@event_priority(-100)  # after mkdocs-static-i18n has set this page's language links
def on_page_context(context, page, config, **kwargs):
    """The language switcher's links relative to the page. mkdocs-static-i18n leaves the
    home pages' links absolute ("/", "/zh/"), which point outside the site when it is
    served under a prefix, as the console serves it under /handbook/. A link from the
    site's root without its leading slash is one the theme's ``url`` filter makes
    relative to the page."""
    # The plugin sets config.extra.alternate as an attribute, which the theme reads.
    alternates = getattr(config.extra, "alternate", None) or config.extra.get("alternate") or []
    for alternate in alternates:
        link = alternate.get("link", "")
        if link.startswith("/") and not link.startswith("//"):
            alternate["link"] = link.lstrip("/") or "./"
    return context


def on_template_context(context, template_name, config, **kwargs):
    """The 404 page has no page of its own in each language: its language links go to the
    two home pages (mkdocs-static-i18n leaves them on whichever page was built last). Like
    every link of the 404 page, they are absolute: it is served at any path."""
    if template_name == "404.html":
        for alternate in getattr(config.extra, "alternate", None) or []:
            alternate["link"] = "/" if alternate.get("lang") == "en" else f"/{alternate['lang']}/"
    return context


#: A line break between two Chinese characters (or their punctuation) inside a paragraph:
#: HTML shows it as a space, which Chinese does not put between words.
_CJK_BREAK = re.compile(r"(?<=[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef“”])\n"
                        r"(?=[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef“”`*\[])")


def _join_chinese_lines(markdown: str) -> str:
    """Join a Chinese paragraph's source lines, outside fenced code."""
    parts = re.split(r"(^```.*?^```[^\n]*$)", markdown, flags=re.S | re.M)
    return "".join(part if part.startswith("```") else _CJK_BREAK.sub("", part)
                   for part in parts)


# --- the lesson pages ------------------------------------------------------------------------
# Each function below speaks the catalog's language of the moment (``_()``), which the
# caller sets to the page's; ``language`` ("en", "zh") picks the half of a lesson's text.

def _article_keys() -> list[str]:
    """The articles that have lessons, in order, then "beyond" when a lab names none."""
    labs = lesson_text.labs().values()
    keys = [a for a in ARTICLES if any(a in lab.articles for lab in labs)]
    return keys + (["beyond"] if any(not lab.articles for lab in labs) else [])


def _labs_of(key: str) -> list:
    labs = lesson_text.labs().values()
    if key == "beyond":
        return [lab for lab in labs if not lab.articles]
    return [lab for lab in labs if key in lab.articles]


def _article_heading(key: str) -> str:
    if key == "beyond":
        return _("Beyond the articles")
    return f"{key} · {ARTICLES[key].title}"


def _article_line(key: str) -> str:
    if key == "beyond":
        return _("Lessons the articles leave out: a conditional UPDATE instead of a lock, "
                 "clients that retry, the network between the parts, and owners Python can "
                 "confuse.")
    article = ARTICLES[key]
    who = join(part for part in (_(article.by) if article.by else "", article.date) if part)
    return f"*{who}* — {_(article.about)}" if who else _(article.about)


def _article_page(key: str, language: str) -> str:
    labs = _labs_of(key)
    out = [f"# {_article_heading(key)}", "", _article_line(key), "",
           "## " + _("The lessons on this page") + " {#the-lessons-on-this-page}", "",
           _row(_("id"), _("title"), _("Lab"), _("lab time")), "| --- | --- | --- | --- |"]
    for lab in labs:
        out.append(f"| [{lab.id}](#{lab.id.lower()}) | {_(lab.title)} | "
                   f"`{lab.name}` | ~{lab.seconds} s |")
    out.append("")
    for lab in labs:
        out += _lesson(lab, key, language)
    return "\n".join(out) + "\n"


def _lesson(lab, key: str, language: str) -> list[str]:
    text = lesson_text.lessons()[lab.id]
    out = [f"## {lab.id} · {_(lab.title)} {{#{lab.id.lower()}}}", "",
           _bold(_("The lesson.")) + " " + text.claim(language), ""]
    if text.where:
        out += [_bold(_("What the articles say:")), ""]
        for article, said in text.where.items():
            link = (article if article == key
                    else f"[{article}]({article.lower()}.md#{lab.id.lower()})")
            out.append("- " + _("%(article)s (%(title)s): %(said)s", article=f"**{link}**",
                                 title=ARTICLES[article].title, said=said(language)))
        out.append("")
    command, name = f"`./run lab {lab.id}`", f"`{lab.name}`"
    run = (_("%(command)s (%(name)s, about %(seconds)s s; needs %(needs)s)", command=command,
             name=name, seconds=lab.seconds, needs=_needs(lab)) if lab.needs
           else _("%(command)s (%(name)s, about %(seconds)s s)", command=command, name=name,
                  seconds=lab.seconds))
    console = _("Labs → %(id)s → Run", id=lab.id)
    items = [(_("Lab:"), run), (_("Console:"), console), (_("Watch:"), text.watch(language)),
             (_("The fix:"), text.fix(language)),
             (_("Read:"), join(f"`{path}`" for path in text.read)),
             (_("Exercise:"), _practised_by(lab.id, text, language))]
    out += [f"- {_bold(label)} {said}" for label, said in items] + [""]
    return out


def _bold(label: str) -> str:
    return f"**{label}**"


def _practised_by(lesson_id: str, text, language: str) -> str:
    """The exercises whose checks grade the lesson; else why none can; else "none yet"."""
    exercises = [f"[{e.id} · {e.title}](../exercises.md#exercise-{e.id})"
                 for e in _exercises() if lesson_id in e.lessons]
    if exercises:
        return join(exercises)
    return text.no_exercise(language) if text.no_exercise else _("none yet")


def _exercises() -> list:
    """The exercises, as their registry lists them (the handbook renders what the
    workshop's exercises declare; the workshop itself never imports them)."""
    from lockshop.exercises import EXERCISES

    return list(EXERCISES.values())


def _needs(lab) -> str:
    """What a lab needs, in the lab list's words."""
    from lockshop.workshop.labs import NEEDS

    return join(_(NEEDS[need]) if need in NEEDS else need for need in lab.needs)


def _lesson_index(language: str) -> str:
    intro = _("Every lesson the workshop teaches, by article. Each entry says the lesson, "
              "what the article says and where, the lab that stages it (`./run lab ID`, or "
              "the console's Labs list), what to watch, the fix, the code to read and the "
              "exercise that practises it, or why none can. A lesson of two articles is on "
              "both pages.")
    out = ["# " + _("Every lesson"), "", intro, ""]
    for key in _article_keys():
        anchor = " {#beyond-the-articles}" if key == "beyond" else ""
        out += [f"## [{_article_heading(key)}]({key.lower()}.md){anchor}", "",
                _article_line(key), ""]
        for lab in _labs_of(key):
            out.append(f"- [{lab.id}]({key.lower()}.md#{lab.id.lower()}) {_(lab.title)}")
        out.append("")
    return "\n".join(out) + "\n"


# --- tables for the hand-written pages ---------------------------------------------------------

def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _link(here: str, target: str) -> str:
    """``target`` (from the docs root) relative to the folder ``here``."""
    return posixpath.relpath(target, here or ".")


def _exercises_table(language: str, here: str) -> str:
    out = [_row("#", _("title"), _("skeleton"), _("Lessons")), "| --- | --- | --- | --- |"]
    labs = lesson_text.labs()
    for exercise in _exercises():
        links = join(f"[{lid}]({_link(here, lesson_text.page(labs[lid]))}#{lid.lower()})"
                     if lid in labs else lid for lid in exercise.lessons)
        out.append(f"| <span id=\"exercise-{exercise.id}\"></span>{exercise.id} | "
                   f"{exercise.title} | `{exercise.file}` | {links} |")
    return "\n".join(out) + "\n"


def _glossary() -> list[dict]:
    data = yaml.safe_load((DOCS / "glossary.yml").read_text(encoding="utf-8"))
    return data["terms"]


def _glossary_table(language: str, here: str) -> str:
    out = [_row(_("term"), "中文", _("meaning"), _("the articles say")),
           "| --- | --- | --- | --- |"]
    for entry in _glossary():
        meaning = entry.get("zh_meaning") if language == "zh" else entry.get("meaning")
        anchor = re.sub(r"[^a-z]+", "-", entry["term"].lower()).strip("-")
        out.append(f"| <span id=\"{anchor}\"></span>**{entry['term']}** | {entry['zh']} | "
                   f"{meaning} | {entry.get('article', '')} |")
    return "\n".join(out) + "\n"


def _strategies_table(language: str, here: str) -> str:
    """Every strategy the shop can run, as the API and the CLI list them: the locks from
    their registry (``locks/strategies.py``), then the transaction strategies
    (``shop/orders/order_strategies.py``)."""
    from shop.orders.order_strategies import all_strategies

    out = [_row(_("name"), _("family"), _("how it works"), _("expected across instances"),
                _("how it fails")), "| --- | --- | --- | --- | --- |"]
    for strategy in all_strategies():
        expected = _("correct") if strategy.correct_across_instances else _("fails")
        # the module follows the summary in brackets: no full stop between them
        summary = _(strategy.summary).removesuffix(".").removesuffix("。")
        failure = _(strategy.failure_mode) if strategy.failure_mode else "—"
        how = _("%(summary)s (%(module)s)", summary=summary, module=f"`{_code_of(strategy)}`")
        out.append(f"| `{strategy.name}` | {strategy.family} | {how} | {expected} | "
                   f"{failure} |")
    return "\n".join(out) + "\n"


def _code_of(strategy) -> str:
    """The file a strategy's code is in: its lock's module, or its transaction's."""
    from locks.registry import get

    module = (strategy.runner.__module__ if strategy.runner is not None
              else get(strategy.name).factory.partition(":")[0])
    return module.replace(".", "/") + ".py"


def _lab_times_table(language: str, here: str) -> str:
    out = [_row(_("id"), _("name"), _("estimate"), _("measured"), _("needs")),
           "| --- | --- | ---: | ---: | --- |"]
    for lab in lesson_text.labs().values():
        measured = f"{MEASURED[lab.id]:g} s" if lab.id in MEASURED else ""
        link = f"[{lab.id}]({_link(here, lesson_text.page(lab))}#{lab.id.lower()})"
        out.append(f"| {link} | `{lab.name}` | ~{lab.seconds} s | {measured} | "
                   f"{_needs(lab)} |")
    total = sum(lab.seconds for lab in lesson_text.labs().values())
    return "\n".join(out) + "\n\n" + _("Estimated, all the labs: about %(seconds)s s.",
                                      seconds=total) + "\n"


TABLES = {"exercises": _exercises_table, "glossary": _glossary_table,
          "strategies": _strategies_table, "lab-times": _lab_times_table}
