"""MkDocs hook: the handbook's pages that come from the project's own records.

- The lesson pages (one per article, one for the lessons beyond them, and an index) are
  written here from the lab registry (id, name, title, articles, needs, time) and
  ``lockshop.workshop.lessons`` (the text, English and Chinese): a lab added is a lesson
  added, and an article a lab names is a page added to the navigation. They are written
  as files into docs/lessons/ (ignored by git) before MkDocs collects its files, because
  the i18n plugin pairs a page with its translation by their files on disk; a file is
  rewritten only when its text changed, so that ``mkdocs serve`` does not rebuild for ever.
- Hand-written pages hold markers, ``<!-- generated: NAME -->``, replaced by a table from
  a record: the glossary (docs/glossary.yml), the exercises, the strategies, the labs'
  times.
- The glossary's Chinese words are given to jieba, which the search plugin uses to cut
  Chinese text into words, so that a search for 羊群效应 finds the page that says it.

The Chinese page of ``x.md`` is ``x.zh.md`` (mkdocs-static-i18n's suffix layout).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

import yaml
from mkdocs.plugins import event_priority

from lockshop.workshop import lessons

DOCS = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"<!--\s*generated:\s*([\w-]+)\s*-->")

WORDS = {
    "en": {"lesson": "The lesson", "says": "What the article says", "lab": "Lab",
           "console": "Console", "watch": "Watch", "fix": "The fix", "read": "Read",
           "exercise": "Exercise", "none": "none yet", "about": "about", "needs": "needs",
           "console_path": "Labs → {id} → Run", "beyond": "Beyond the articles",
           "beyond_about": "Lessons the articles leave out: a conditional UPDATE instead of a "
                           "lock, clients that retry, the network between the parts, and "
                           "owners Python can confuse.",
           "by": "by", "lessons": "Lessons", "on_page": "The lessons on this page",
           "id": "id", "title": "title", "time": "lab time", "also": "also on",
           "all_lessons": "Every lesson", "page": "page", "file": "skeleton",
           "exercises_from": "Exercises as listed by lockshop.exercises.",
           "exercises_planned": "Exercises as planned (lockshop.exercises does not import "
                                "here).",
           "term": "term", "zh": "中文", "meaning": "meaning", "article": "the articles say",
           "measured": "measured", "estimate": "estimate", "needs_col": "needs",
           "name": "name", "stop": ". ", "colon": ": ", "open": " (", "close": ")",
           "semi": "; ", "comma": ", ", "s": "s"},
    "zh": {"lesson": "知识点", "says": "文章怎么说", "lab": "实验", "console": "控制台",
           "watch": "看什么", "fix": "修复", "read": "读代码", "exercise": "练习",
           "none": "暂无", "about": "约", "needs": "需要",
           "console_path": "“实验”（Labs）列表 → {id} → “运行”（Run）",
           "beyond": "文章之外", "beyond_about": "文章没有讲到的知识点：用带条件的 UPDATE 代替锁、"
                                                "会重试的客户端、部件之间的网络，以及 Python 会"
                                                "混淆的所有者。",
           "by": "作者", "lessons": "知识点", "on_page": "本页的知识点", "id": "编号",
           "title": "标题", "time": "实验耗时", "also": "另见",
           "all_lessons": "全部知识点", "page": "页面", "file": "代码骨架",
           "exercises_from": "练习列表取自 lockshop.exercises。",
           "exercises_planned": "练习列表取自计划（此处无法导入 lockshop.exercises）。",
           "term": "术语", "zh": "中文", "meaning": "含义", "article": "文章的说法",
           "measured": "实测", "estimate": "估计", "needs_col": "需要", "name": "名称",
           "stop": "。", "colon": "：", "open": "（", "close": "）", "semi": "；", "comma": "，",
           "s": "秒"},
}

#: The labs' times on the 2-core development machine, measured with
#: ``time .venv/bin/lockshop lab ID`` on 2026-11-24 (wall clock, the lab run starting and
#: stopping its own servers; load average about 2.5); the rest are the registry's estimates.
MEASURED = {"C01": 2.3, "C09": 11.8, "C11": 2.6, "C14": 4.9, "C18": 8.7, "C19": 4.2}


# --- MkDocs events -------------------------------------------------------------------------

def on_config(config, **_):
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
        pages[f"index{suffix}.md"] = _lesson_index(language)
        for key in _article_keys():
            pages[f"{key.lower()}{suffix}.md"] = _article_page(key, language)
    folder.mkdir(exist_ok=True)
    for stale in set(p.name for p in folder.glob("*.md")) - set(pages):
        (folder / stale).unlink()
    for name, text in pages.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def on_page_markdown(markdown, page, config, files, **_):
    language = "zh" if page.file.src_uri.endswith(".zh.md") else "en"
    here = posixpath.dirname(page.file.src_uri)

    def render(match):
        name = match.group(1)
        if name not in TABLES:
            raise ValueError(f"{page.file.src_uri}: no generated table {name!r}")
        return TABLES[name](language, here)

    markdown = MARKER.sub(render, markdown)
    return _join_chinese_lines(markdown) if language == "zh" else markdown


@event_priority(-100)  # after mkdocs-static-i18n has set this page's language links
def on_page_context(context, page, config, **_):
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

def _article_keys() -> list[str]:
    """The articles that have lessons, in order, then "beyond" when a lab names none."""
    labs = lessons.labs().values()
    keys = [a for a in lessons.ARTICLES if any(a in lab.articles for lab in labs)]
    return keys + (["beyond"] if any(not lab.articles for lab in labs) else [])


def _labs_of(key: str) -> list:
    labs = lessons.labs().values()
    if key == "beyond":
        return [lab for lab in labs if not lab.articles]
    return [lab for lab in labs if key in lab.articles]


def _title(lab, language: str) -> str:
    return lessons.LESSONS[lab.id].title_zh if language == "zh" else lab.title


def _article_heading(key: str, language: str) -> str:
    words = WORDS[language]
    if key == "beyond":
        return words["beyond"]
    return f"{key} · {lessons.ARTICLES[key]['title']}"


def _article_line(key: str, language: str) -> str:
    words = WORDS[language]
    if key == "beyond":
        return words["beyond_about"]
    article = lessons.ARTICLES[key]
    who = ", ".join(part for part in (article["by"], article["date"]) if part)
    return f"*{who}* — {article['about'](language)}" if who else article["about"](language)


def _article_page(key: str, language: str) -> str:
    words = WORDS[language]
    labs = _labs_of(key)
    out = [f"# {_article_heading(key, language)}", "", _article_line(key, language), "",
           f"## {words['on_page']}", "",
           f"| {words['id']} | {words['title']} | {words['lab']} | {words['time']} |",
           "| --- | --- | --- | --- |"]
    for lab in labs:
        out.append(f"| [{lab.id}](#{lab.id.lower()}) | {_title(lab, language)} | "
                   f"`{lab.name}` | ~{lab.seconds} s |")
    out.append("")
    for lab in labs:
        out += _lesson(lab, key, language)
    return "\n".join(out) + "\n"


def _lesson(lab, key: str, language: str) -> list[str]:
    words = WORDS[language]
    text = lessons.LESSONS[lab.id]
    w = words
    needs = f"{w['semi']}{w['needs']} {', '.join(lab.needs)}" if lab.needs else ""
    out = [f"## {lab.id} · {_title(lab, language)} {{#{lab.id.lower()}}}", "",
           f"**{w['lesson']}{w['stop'].strip()}** {text.claim(language)}", ""]
    if text.where:
        out += [f"**{w['says']}{w['colon'].strip()}**", ""]
        for article, said in text.where.items():
            link = (article if article == key
                    else f"[{article}]({article.lower()}.md#{lab.id.lower()})")
            title = lessons.ARTICLES[article]["title"]
            out.append(f"- **{link}**{w['open']}{title}{w['close']}{w['colon']}{said(language)}")
        out.append("")
    exercise = words["comma"].join(
        f"[{e['id']} · {e['title'](language)}](../exercises{_zh(language)}.md#exercise-{e['id']})"
        for e in lessons.exercises_for(lab.id)) or words["none"]
    c = w["colon"].strip()
    out += [f"- **{w['lab']}{c}** `./run lab {lab.id}`{w['open']}`{lab.name}`{w['comma']}"
            f"{w['about']} {lab.seconds} {w['s']}{needs}{w['close']}",
            f"- **{w['console']}{c}** {w['console_path'].format(id=lab.id)}",
            f"- **{w['watch']}{c}** {text.watch(language)}",
            f"- **{w['fix']}{c}** {text.fix(language)}",
            f"- **{w['read']}{c}** " + w["comma"].join(f"`{path}`" for path in text.read),
            f"- **{w['exercise']}{c}** {exercise}", ""]
    return out


def _zh(language: str) -> str:
    """Links in a generated page name the English file; the i18n plugin sends a Chinese
    page's links to the Chinese page. Nothing to add."""
    return ""


def _lesson_index(language: str) -> str:
    words = WORDS[language]
    intro = {
        "en": "Every lesson the workshop teaches, by article. Each entry says the lesson, "
              "what the article says and where, the lab that stages it (`./run lab ID`, "
              "or the console's Labs list), what to watch, the fix, the code to read and "
              "the exercise that practises it. A lesson of two articles is on both pages.",
        "zh": "工作坊讲的每个知识点，按文章排列。每一条都写明：知识点本身、文章在哪里怎么说、重现它的"
              "实验（`./run lab 编号`，或控制台的“实验”列表）、看什么、怎么修、读哪段代码，以及"
              "对应的练习。同时出自两篇文章的知识点在两页上都有。"}[language]
    out = [f"# {words['all_lessons']}", "", intro, ""]
    for key in _article_keys():
        out += [f"## [{_article_heading(key, language)}]({key.lower()}.md)", "",
                _article_line(key, language), ""]
        for lab in _labs_of(key):
            out.append(f"- [{lab.id}]({key.lower()}.md#{lab.id.lower()}) "
                       f"{_title(lab, language)}")
        out.append("")
    return "\n".join(out) + "\n"


# --- tables for the hand-written pages ---------------------------------------------------------

def _link(here: str, target: str) -> str:
    """``target`` (from the docs root) relative to the folder ``here``."""
    return posixpath.relpath(target, here or ".")


def _exercises_table(language: str, here: str) -> str:
    words = WORDS[language]
    source, found = lessons.exercises()
    out = [f"| # | {words['title']} | {words['file']} | {words['lessons']} |",
           "| --- | --- | --- | --- |"]
    labs = lessons.labs()
    for exercise in found:
        links = ", ".join(
            f"[{lid}]({_link(here, lessons.page(labs[lid]))}#{lid.lower()})"
            if lid in labs else lid for lid in exercise["lessons"])
        out.append(f"| <span id=\"exercise-{exercise['id']}\"></span>{exercise['id']} | "
                   f"{exercise['title'](language)} | `{exercise['file']}` | {links} |")
    note = words["exercises_from" if source == "lockshop.exercises" else "exercises_planned"]
    return "\n".join(out) + f"\n\n*{note}*\n"


def _glossary() -> list[dict]:
    data = yaml.safe_load((DOCS / "glossary.yml").read_text(encoding="utf-8"))
    return data["terms"]


def _glossary_table(language: str, here: str) -> str:
    words = WORDS[language]
    out = [f"| {words['term']} | 中文 | {words['meaning']} | {words['article']} |",
           "| --- | --- | --- | --- |"]
    for entry in _glossary():
        meaning = entry.get("zh_meaning") if language == "zh" else entry.get("meaning")
        anchor = re.sub(r"[^a-z]+", "-", entry["term"].lower()).strip("-")
        out.append(f"| <span id=\"{anchor}\"></span>**{entry['term']}** | {entry['zh']} | "
                   f"{meaning} | {entry.get('article', '')} |")
    return "\n".join(out) + "\n"


def _strategies_table(language: str, here: str) -> str:
    from locks.registry import all_strategies

    out = ["| name | family | how it works | expected across instances | how it fails |",
           "| --- | --- | --- | --- | --- |"]
    for strategy in all_strategies():
        expected = "correct" if strategy.correct_across_instances else "fails"
        module = strategy.factory.partition(":")[0].replace(".", "/") + ".py"
        out.append(f"| `{strategy.name}` | {strategy.family} | {strategy.summary} "
                   f"(`{module}`) | {expected} | {strategy.failure_mode} |")
    return "\n".join(out) + "\n"


def _lab_times_table(language: str, here: str) -> str:
    words = WORDS[language]
    out = [f"| {words['id']} | {words['name']} | {words['estimate']} | {words['measured']} | "
           f"{words['needs_col']} |", "| --- | --- | ---: | ---: | --- |"]
    for lab in lessons.labs().values():
        measured = f"{MEASURED[lab.id]:g} s" if lab.id in MEASURED else ""
        link = f"[{lab.id}]({_link(here, lessons.page(lab))}#{lab.id.lower()})"
        out.append(f"| {link} | `{lab.name}` | ~{lab.seconds} s | {measured} | "
                   f"{', '.join(lab.needs)} |")
    total = sum(lab.seconds for lab in lessons.labs().values())
    return "\n".join(out) + f"\n\n{words['estimate']}: ~{total} s.\n"


TABLES = {"exercises": _exercises_table, "glossary": _glossary_table,
          "strategies": _strategies_table, "lab-times": _lab_times_table}
