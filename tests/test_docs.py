"""The handbook: it builds with ``mkdocs build --strict`` (a broken link, a missing anchor
or a page left out of the navigation fails it), every lab has its lesson in both
languages, the built site loads nothing from the internet, and search finds a Chinese word.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urljoin

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("mkdocs", reason="the handbook needs the docs extra (pip install -e '.[docs]')")
pytest.importorskip("material", reason="the handbook needs the docs extra (mkdocs-material)")


def _hook_module(name: str):
    """A module of the handbook's hook folder (docs/hooks/), which is not a package."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


lessons = _hook_module("lesson_text")


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, timeout=300,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("handbook")
    done = build(ROOT / "mkdocs.yml", folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return folder


def test_the_handbook_builds_strict(site):
    assert (site / "index.html").is_file() and (site / "zh" / "index.html").is_file()


def test_a_broken_link_and_a_page_left_out_of_the_navigation_fail_the_build(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "docs", tree / "docs", ignore=shutil.ignore_patterns("lessons"))
    shutil.copy(ROOT / "mkdocs.yml", tree / "mkdocs.yml")
    (tree / "lockshop").symlink_to(ROOT / "lockshop")  # mkdocs.yml watches the registries
    (tree / "docs" / "orphan.md").write_text("# Not in the navigation\n\n"
                                             "[a page that is not there](nowhere.md)\n")
    done = build(tree / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "orphan.md" in done.stderr and "not included in the \"nav\"" in done.stderr
    assert "nowhere.md" in done.stderr


def test_the_lesson_text_covers_every_lab_and_every_article_it_names():
    assert lessons.missing() == []


def test_every_lab_has_its_lesson_entry_in_both_languages(site):
    for lab in lessons.labs().values():
        page = lessons.page(lab).removesuffix(".md")
        for language in ("", "zh/"):
            html = (site / f"{language}{page}" / "index.html").read_text(encoding="utf-8")
            entry = re.search(rf'<h2 id="{lab.id.lower()}">(.*?)</h2>', html, re.S)
            assert entry, f"{lab.id}: no lesson entry on {language}{page}"
            assert f"./run lab {lab.id}" in html  # as a fresh clone runs it
    # the Chinese entries are under zh/: the English page and its twin, both with C11
    assert 'id="c11"' in (site / "zh" / "lessons" / "a0" / "index.html").read_text("utf-8")


def test_a_lesson_s_title_on_its_chinese_page_is_the_catalog_s(site):
    """One title, not two translations of it: the data file has none, and the Chinese page
    says the catalog's."""
    from shop.i18n import CHINESE, _, language

    lab = lessons.labs()["C11"]
    with language(CHINESE):
        title = _(lab.title)
    assert title != lab.title  # the catalog has it
    html = (site / "zh" / "lessons" / "a0" / "index.html").read_text(encoding="utf-8")
    entry = re.search(r'<h2 id="c11">(.*?)</h2>', html, re.S).group(1)
    assert title in entry


@pytest.mark.parametrize("record, refusal", [
    ("claim: {en: One half.}", "C01: claim needs both en and zh"),
    ("claim: {en: a, zh: 甲}\n  title_zh: 标题", "C01: no such field ['title_zh']"),
])
def test_a_lesson_record_with_one_language_or_an_unknown_field_is_refused(
        tmp_path, monkeypatch, record, refusal):
    source = tmp_path / "lessons.yml"
    source.write_text(f"C01:\n  {record}\n  watch: {{en: a, zh: 甲}}\n  fix: {{en: b, zh: 乙}}\n",
                      encoding="utf-8")
    monkeypatch.setattr(lessons, "SOURCE", source)
    with pytest.raises(ValueError) as refused:
        lessons.lessons()
    assert refusal in str(refused.value)


def test_the_lessons_no_exercise_can_practise_say_why_and_none_does():
    """Issue 39: a measurement (C23, C43), a server's failure (C30, C31, C32) and the
    network (C45-C48) say on their page why no exercise practises them, and no exercise
    in the registry claims one of them."""
    from lockshop.exercises import EXERCISES

    unpractisable = {lesson.id for lesson in lessons.lessons().values() if lesson.no_exercise}
    assert unpractisable == {"C23", "C43", "C30", "C31", "C32", "C45", "C46", "C47", "C48"}
    practised = {lesson for exercise in EXERCISES.values() for lesson in exercise.lessons}
    assert unpractisable & practised == set()


def test_the_lesson_pages_say_why_a_lesson_has_no_exercise(site):
    for path, words in (("lessons/a2", "this lesson is a server's failure"),
                        ("zh/lessons/a2", "这个知识点讲的是服务器的故障"),
                        ("lessons/beyond", "this lesson is the network's")):
        html = (site / path / "index.html").read_text(encoding="utf-8")
        assert words in html, path


def test_the_workshop_does_not_import_the_exercises():
    """The grader imports the workshop's labs; the arrow never runs back up."""
    workshop = ROOT / "lockshop" / "workshop"
    importers = [str(path.relative_to(ROOT)) for path in workshop.rglob("*.py")
                 if re.search(r"^\s*(from|import) lockshop\.exercises", path.read_text("utf-8"),
                              re.M)]
    assert importers == []


def test_a_lesson_of_two_articles_is_on_both_article_pages(site):
    lab = lessons.labs()["C11"]
    assert lab.articles == ("A0", "A2")
    for article in lab.articles:
        html = (site / "lessons" / article.lower() / "index.html").read_text(encoding="utf-8")
        assert 'id="c11"' in html


def test_every_title_in_the_navigation_has_its_chinese():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    zh = next(entry for entry in next(plugin["i18n"] for plugin in config["plugins"]
                                      if isinstance(plugin, dict) and "i18n" in plugin)
              ["languages"] if entry["locale"] == "zh")

    def titles(nav) -> set[str]:
        found = set()
        for item in nav:
            if isinstance(item, dict):
                for title, value in item.items():
                    found.add(title)
                    if isinstance(value, list):
                        found |= titles(value)
        return found

    assert titles(config["nav"]) - set(zh["nav_translations"]) == set()


def _lesson_ids(text: str) -> set[str]:
    """C01, and every id of a range C06–C08."""
    found = set()
    for first, last in re.findall(r"C(\d\d)(?:–C(\d\d))?", text):
        found |= {f"C{n:02d}" for n in range(int(first), int(last or first) + 1)}
    return found


@pytest.mark.parametrize("page", ["guide/index.md", "guide/index.zh.md"])
def test_the_guides_plan_and_its_list_of_lessons_left_out_name_every_lab_once(page):
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    plan = _lesson_ids(text[:text.index("| 2:55 |")])
    left_out = _lesson_ids(text[text.index("| 2:55 |"):text.index("## 1.")])
    labs = set(lessons.labs())
    assert labs - plan - left_out == set(), "in neither the plan nor the lessons left out"
    assert plan & left_out == set(), "both in the plan and left out"
    assert (plan | left_out) - labs == set(), "not a lab"


@pytest.mark.parametrize("page", ["guide/second-afternoon.md", "guide/second-afternoon.zh.md"])
def test_the_second_afternoon_s_plan_adds_up_and_names_labs(page):
    """Each episode starts when the one before it ends (its teaching and exercise minutes;
    a break is 10), the afternoon is three hours, and every lesson it names is a lab."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in (ROOT / "docs" / page).read_text(encoding="utf-8").splitlines()
            if re.match(r"\| \d:\d\d \|", line)]
    assert len(rows) >= 5

    def minutes(start: str) -> int:
        hours, mins = start.split(":")
        return int(hours) * 60 + int(mins)

    for row, following in zip(rows, rows[1:]):
        length = (int(row[2] or 0) + int(row[3] or 0)) if row[2] else 10
        assert minutes(row[0]) + length == minutes(following[0]), row
    assert minutes(rows[-1][0]) + int(rows[-1][2]) == 180
    named = _lesson_ids(" ".join(row[4] for row in rows if len(row) > 4))
    assert named and named - set(lessons.labs()) == set()


def test_the_strategies_table_is_generated_from_the_records_the_api_lists(site):
    """One home per fact: the strategies page's table has a row for every strategy the
    shop can run, in the API's order, made from its record (the locks' registry, then the
    transaction strategies), and the page's source copies no row of it by hand."""
    from shop.orders.order_strategies import all_strategies

    strategies = all_strategies()
    for source in ("strategies.md", "strategies.zh.md"):
        text = (ROOT / "docs" / source).read_text(encoding="utf-8")
        assert "<!-- generated: strategies -->" in text
        assert [line for line in text.splitlines()
                if re.match(r"\|\s*`\w+`\s*\|", line)] == [], source
    page = (site / "strategies" / "index.html").read_text(encoding="utf-8")
    rows = re.findall(r"<tr>\s*<td><code>(\w+)</code></td>\s*<td>[^<]*</td>\s*<td>(.*?)</td>",
                      page, re.S)
    assert [name for name, _how in rows] == [s.name for s in strategies]
    for (name, how), strategy in zip(rows, strategies):
        assert strategy.summary.removesuffix(".") in how.replace("&gt;", ">"), name


def test_the_language_switcher_works_under_a_prefix(site):
    """The console serves the handbook under /handbook/: every page's language links are
    relative, and each lands on a page of the built site."""
    pages = [site / "index.html", site / "zh" / "index.html",
             site / "guide" / "index.html", site / "zh" / "strategies" / "index.html"]
    for path in pages:
        folder = path.parent.relative_to(site).as_posix()
        url = "/handbook/" + ("" if folder == "." else f"{folder}/")
        links = re.findall(r'<a href="([^"]*)" hreflang="(en|zh)"', path.read_text("utf-8"))
        assert {lang for _, lang in links} == {"en", "zh"}, path
        for href, lang in links:
            assert not href.startswith("/"), f"{path.relative_to(site)}: {href}"
            target = urljoin(url, href).removeprefix("/handbook/")
            assert (site / target / "index.html").is_file(), f"{url} -> {href} ({lang})"
            assert target.startswith("zh/") == (lang == "zh"), f"{url} -> {href} ({lang})"


def test_the_built_site_loads_nothing_from_the_internet(site):
    """No script, stylesheet or font from a CDN or Google Fonts: a room may have no
    internet. Links a reader follows (the references) may point out."""
    loads = re.compile(r'<(?:script|img|iframe)[^>]*\ssrc="(https?:)?//|'
                       r'<link[^>]*\shref="(https?:)?//[^"]*"[^>]*>|'
                       r'@import\s+url\(["\']?(https?:)?//', re.I)
    found = []
    for path in [*site.rglob("*.html"), *site.rglob("*.css")]:
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{path.relative_to(site)}: {m.group(0)[:80]}" for m in loads.finditer(text)
                  if "rel=\"canonical\"" not in m.group(0)]
        assert "fonts.googleapis.com" not in text, path
    assert found == []


def test_search_finds_a_chinese_word_on_a_chinese_page(site):
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    separator = re.compile(index["config"]["separator"])

    def words(doc: dict) -> set[str]:
        return set(separator.split(doc["title"] + " " + doc["text"]))

    herd = [doc["location"] for doc in index["docs"] if "羊群效应" in words(doc)]
    assert any(location.startswith("zh/lessons/") for location in herd), herd
    # and a word jieba knows only from the glossary is kept whole, not cut in two
    nodes = [doc["location"] for doc in index["docs"] if "临时顺序节点" in words(doc)]
    assert any(location.startswith("zh/") for location in nodes), nodes
