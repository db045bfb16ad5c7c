"""Languages: one catalog, complete and current; the shop, its API, its pages, the CLI and
the report in Chinese when asked, in English otherwise.

The catalog's checks are the ones ``./run catalog check`` makes (lockshop.catalog), each
shown to catch what it is for on a catalog broken on purpose.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from babel.messages import Catalog
from babel.messages.extract import extract_from_file

from helpers import chromium, require
from lockshop.cluster.redis_servers import redis_server_binary
from lockshop import catalog as catalogs
from lockshop.table import format_table, width
from shop import i18n

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.yml"
CJK = re.compile(r"[\u4e00-\u9fff]")
CHINESE = i18n.CHINESE


@pytest.fixture(autouse=True)
def english_process():
    """Each test starts, and leaves the process, in English."""
    i18n.set_language("en")
    yield
    i18n.set_language("en")


# --- the catalog -------------------------------------------------------------------

def test_every_entry_is_translated_not_fuzzy_and_keeps_its_placeholders():
    for language in catalogs.TRANSLATED:
        assert catalogs.problems(catalogs.read_catalog(language), language) == []


def test_the_catalog_checks_catch_each_kind_of_fault():
    broken = Catalog(locale="zh_CN")
    broken.add("nobody translated this")
    broken.add("%(count)s orders", "%(count)s 个订单", flags=["fuzzy"])
    broken.add("order %(order)s is taken", "订单已被占用")  # the placeholder is gone
    broken.add("lock %(lock)s", "锁 %(name)s")  # a placeholder English does not have
    broken.add("fine %(x)s", "好 %(x)s")
    found = catalogs.problems(broken, "zh_CN")
    assert any("'nobody translated this': not translated" in p for p in found)
    assert any("'%(count)s orders': fuzzy" in p for p in found)
    assert any("'order %(order)s is taken': placeholders" in p for p in found)
    assert any("'lock %(lock)s'" in p for p in found)  # Babel's checker and ours
    assert not any("fine" in p for p in found)


def test_every_string_marked_in_the_code_is_in_the_catalog(tmp_path):
    template = catalogs.extract(tmp_path / "messages.pot")
    assert len(template) > 250  # the extraction found the marked code at all
    for language in catalogs.TRANSLATED:
        missing = catalogs.missing(template, catalogs.read_catalog(language))
        assert missing == [], f"marked but not in the {language} catalog: run ./run catalog"


def test_a_string_marked_and_not_in_the_catalog_is_found(tmp_path):
    source = tmp_path / "project" / "shop" / "new_feature.py"
    source.parent.mkdir(parents=True)
    source.write_text('from shop.i18n import _, lazy_gettext\n\n'
                      'TITLE = lazy_gettext("A title nobody translated")\n'
                      'print(_("Buy"), _("A sentence nobody translated"))\n')
    template = catalogs.extract(tmp_path / "messages.pot", root=tmp_path / "project")
    assert catalogs.missing(template, catalogs.read_catalog(CHINESE)) == [
        "A sentence nobody translated", "A title nobody translated"]


def test_run_catalog_check_passes_and_changes_nothing():
    po = i18n.catalog_path(CHINESE)
    before = po.read_bytes()
    done = subprocess.run([sys.executable, "-m", "lockshop.catalog", "check"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{CHINESE}: " in done.stdout and "messages translated" in done.stdout
    assert po.read_bytes() == before


def test_gettext_s_own_compiler_accepts_the_catalog(tmp_path):
    msgfmt = shutil.which("msgfmt")
    require(msgfmt is not None, "msgfmt is not installed (Debian package gettext)")
    for language in catalogs.TRANSLATED:
        done = subprocess.run([msgfmt, "--check", "--statistics", "-o", str(tmp_path / "x.mo"),
                               str(i18n.catalog_path(language))],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "untranslated" not in done.stderr and "fuzzy" not in done.stderr, done.stderr


def test_argparse_s_own_messages_are_all_in_the_catalog():
    """argparse speaks through the catalog (lockshop.cli.language): this Python's argparse
    must find every one of its messages there (lockshop/cli/argparse_messages.py)."""
    chinese = catalogs.read_catalog(CHINESE)
    messages = [message for _line, message, _comments, _context in extract_from_file(
        "python", argparse.__file__, keywords={"_": None, "ngettext": (1, 2)})]
    assert len(messages) > 20
    absent = [m for m in messages if (m if isinstance(m, str) else m[0]) not in chinese]
    assert absent == [], "add them to lockshop/cli/argparse_messages.py, then ./run catalog"


# --- the terms ------------------------------------------------------------------------

def glossary_terms(entries: list[dict]) -> list[tuple[str, list[str], re.Pattern]]:
    """(term, the Chinese words that say it, a pattern finding the term in English).

    An entry has the English ``term``, its Chinese (``zh``, ``中文`` or ``zh_CN``: one
    word, or alternatives as "租约 or 过期时间", "误删 (A2: 误释放)", a list) and
    optionally ``forms``, English forms the pattern cannot guess (oversell: oversold)."""
    found = []
    for entry in entries:
        term = str(entry["term"]).strip()
        chinese = next((entry[k] for k in ("zh", "中文", "zh_CN", "chinese") if entry.get(k)), "")
        words = _alternatives(chinese)
        if not words:
            continue
        forms = [term, *entry.get("forms", []), *_irregular(term)]
        pattern = re.compile(r"\b(?:" + "|".join(_english(f) for f in forms) + r")\b", re.I)
        found.append((term, words, pattern))
    return found


def _alternatives(chinese) -> list[str]:
    parts = chinese if isinstance(chinese, list) else re.split(
        r"\s+or\s+|\s*[/、,，;；或]\s*", str(chinese))
    words = []
    for part in parts:
        part = str(part)
        words += CJK_PHRASE.findall(part.split("(")[0].split("（")[0]) or [part.strip()]
        words += CJK_PHRASE.findall(re.sub(r"^[^(（]*", "", part))  # "误删 (A2: 误释放)"
    return [w for w in dict.fromkeys(words) if w]


CJK_PHRASE = re.compile(r"[\u4e00-\u9fff][\u4e00-\u9fff\w -]*[\u4e00-\u9fff\w]|[\u4e00-\u9fff]")


def _english(form: str) -> str:
    *head, last = re.split(r"[\s-]+", form.lower())
    stem = re.escape(last[:-1]) + "(?:e|ing|es|ed)" if last.endswith("e") else (
        re.escape(last) + "(?:s|es|ed|ing)?")
    return r"[\s-]+".join([*(re.escape(w) for w in head), stem])


def _irregular(term: str) -> list[str]:
    return [term.lower().replace("sell", "sold")] if "sell" in term.lower() else []


#: What is not prose: placeholders, quoted names ('strategy', not A's), <token>, commands,
#: identifiers and calls (self.token, fencing_token), assignments (reentrant = True).
CODE = re.compile(r"(?:%\(lockshop\)s|\./run)(?: [a-z]+){1,2}"  # a command, however run
                  r"|%\(\w+\)[-#0 +]?\d*(?:\.\d+)?[a-z]|(?<!\w)'[^']*'(?!\w)|<[^>]*>"
                  r"|\blockshop(?: [a-z]+){1,2}|\b\w+(?:[._]\w+)+(?:\([^)]*\))?|\b\w+ = \w+")
#: A term's word in another sense: a credential, a lab's verdict, a key that contains.
OTHER_SENSES = ("admin token", "did not hold", "does not hold", "holds (", "still holds it",
                "that holds its", "key holds", "holds back", "control character")
#: A lab's verdict said alone, as the console shows it.
VERDICTS = ("holds",)


def glossary_mismatches(catalog: Catalog, entries: list[dict]) -> list[str]:
    """Every entry whose English uses a glossary term while its Chinese uses none of the
    glossary's words for it. The longest term counts first: 'fencing token' is not also
    a 'token'."""
    terms = sorted(glossary_terms(entries), key=lambda t: -len(t[0]))
    found = []
    for message in catalog:
        if not message.id or not message.string or message.id in VERDICTS:
            continue
        english = CODE.sub(" ", " ".join(catalogs._all(message.id)))
        for phrase in OTHER_SENSES:
            english = re.sub(re.escape(phrase), " ", english, flags=re.I)
        chinese = " ".join(message.string if isinstance(message.string, tuple)
                           else (message.string,))
        for term, words, pattern in terms:
            if pattern.search(english) and not any(w in chinese for w in words):
                found.append(f"{catalogs._first(message.id)!r}: '{term}' is {'/'.join(words)}, "
                             f"not in {chinese!r}")
            english = pattern.sub(" ", english)
    return found


def test_the_catalog_says_each_glossary_term_the_glossary_s_way():
    if not GLOSSARY.is_file():
        pytest.skip(f"SKIPPED: {GLOSSARY.relative_to(ROOT)} is not written yet (the "
                    "handbook's glossary); the check itself is tested below")
    import yaml
    data = yaml.safe_load(GLOSSARY.read_text(encoding="utf-8"))
    entries = data.get("terms", data.get("glossary")) if isinstance(data, dict) else data
    assert entries, f"{GLOSSARY} lists no terms"
    assert glossary_terms(entries), f"no entry of {GLOSSARY} has a term and its Chinese"
    for language in catalogs.TRANSLATED:
        assert glossary_mismatches(catalogs.read_catalog(language), entries) == []


def test_the_glossary_check_finds_a_term_said_another_way():
    glossary = [{"term": "oversell", "zh": "超卖", "meaning": "sell more than the stock"},
                {"term": "lease", "中文": "租约 or 过期时间"},
                {"term": "releasing another's lock", "zh": "误删 (A2: 误释放)"},
                {"term": "ephemeral sequential node", "zh": "临时顺序节点"}]
    catalog = Catalog(locale="zh_CN")
    catalog.add("%(count)s oversold", "超卖 %(count)s 件")
    catalog.add("the lease ran out", "过期时间到了")
    catalog.add("an ephemeral sequential node", "一个临时有序节点")  # not the glossary's word
    catalog.add("no lease was taken", "没有拿到锁")  # the term, said nowhere
    catalog.add("Releasing another's lock", "误释放了别人的锁")
    catalog.add("set %(lease)s on self.lease_ms", "设置为 %(lease)s")  # code, not prose
    assert glossary_mismatches(catalog, glossary) == [
        "'an ephemeral sequential node': 'ephemeral sequential node' is 临时顺序节点, "
        "not in '一个临时有序节点'",
        "'no lease was taken': 'lease' is 租约/过期时间, not in '没有拿到锁'"]


# --- choosing the language ----------------------------------------------------------

@pytest.mark.parametrize(("tag", "language"), [
    ("zh", CHINESE), ("zh-CN", CHINESE), ("zh_CN", CHINESE), ("zh-Hans", CHINESE),
    ("zh-Hans-CN", CHINESE), ("zh_CN.UTF-8", CHINESE), ("ZH-cn", CHINESE),
    ("en", "en"), ("en-US", "en"), ("en_GB.UTF-8", "en"),
    ("fr", None), ("zh-TW", None), ("zh-Hant", None), ("C", None), ("", None), (None, None),
])
def test_tags_that_reach_a_catalog(tag, language):
    assert i18n.normalise(tag) == language
    assert i18n.resolve(tag) == (language or "en")


@pytest.mark.parametrize(("environ", "language"), [
    ({"LANG": "zh_CN.UTF-8"}, CHINESE),
    ({"LANG": "C.UTF-8", "LANGUAGE": "zh"}, CHINESE),  # LANGUAGE first, as Python's gettext
    ({"LANG": "zh_CN.UTF-8", "LC_MESSAGES": "en_US.UTF-8"}, "en"),
    ({"LANG": "en_US.UTF-8", "LC_ALL": "zh_CN.UTF-8"}, CHINESE),
    ({"LANGUAGE": "fr:zh_CN:en", "LANG": "fr_FR.UTF-8"}, CHINESE),
    ({"LANGUAGE": "", "LANG": "zh_CN.UTF-8"}, CHINESE),  # empty counts as unset
    ({"LANG": "C"}, "en"), ({"LANG": "fr_FR.UTF-8"}, "en"), ({}, "en"),
])
def test_the_environment_chooses_as_gettext_does(environ, language):
    assert i18n.language_from_environment(environ) == language


def test_lazy_strings_are_said_in_the_language_current_where_shown():
    from lockshop.workshop.runs import FLASH_SALE

    title = i18n.lazy_gettext("Seat sale")
    assert str(FLASH_SALE.title) == "Flash sale" and str(title) == "Seat sale"
    with i18n.language("zh-CN"):
        assert str(FLASH_SALE.title) == "秒杀" and f"{title}" == "选座售票"
        assert i18n.current_language() == CHINESE
    assert str(title) == "Seat sale"
    assert i18n.N_("Buy") == "Buy"
    with i18n.language("zh"):
        assert i18n._(i18n.N_("Buy")) == "购买"
        assert i18n._("product %(product)s not found", product=7) == "找不到商品 7"


def test_a_record_with_lazy_strings_becomes_plain_json():
    import json

    record = {"title": i18n.lazy_gettext("Flash sale"),
              "steps": [{"verdict": i18n.lazy_gettext("correct"), "n": 3}],
              "pair": ("a", i18n.lazy_gettext("Buy"))}
    with pytest.raises(TypeError):
        json.dumps(record)
    with i18n.language(CHINESE):
        assert json.loads(json.dumps(i18n.plain(record), ensure_ascii=False)) == {
            "title": "秒杀", "steps": [{"verdict": "正确", "n": 3}], "pair": ["a", "购买"]}


def test_a_missing_mo_is_compiled_from_the_po_and_an_edited_po_wins(tmp_path, monkeypatch):
    locale = tmp_path / "locale"
    shutil.copytree(i18n.LOCALE_DIR, locale, ignore=shutil.ignore_patterns("*.mo", "*.pot"))
    monkeypatch.setattr(i18n, "LOCALE_DIR", locale)
    i18n.translations.cache_clear()
    try:
        mo = i18n.catalog_path(CHINESE, ".mo")
        assert not mo.exists()
        assert i18n.translations(CHINESE).gettext("Buy") == "购买"
        assert mo.is_file()  # written beside the .po, for the next process
        po = i18n.catalog_path(CHINESE)
        po.write_text(po.read_text(encoding="utf-8").replace('msgstr "购买"', 'msgstr "买"'),
                      encoding="utf-8")
        later = time.time() + 5
        os.utime(po, (later, later))  # edited after the .mo was compiled
        i18n.translations.cache_clear()
        assert i18n.translations(CHINESE).gettext("Buy") == "买"
    finally:
        i18n.translations.cache_clear()


# --- terminal tables ------------------------------------------------------------------

def test_a_table_measures_a_chinese_character_as_two_cells():
    table = format_table(["策略", "超卖"], [("none", 12), ("redis", 0)]).splitlines()
    assert table[0] == "策略   超卖"
    assert [width(line) for line in table] == [11, 11, 11, 11]  # the rule too
    assert table[2] == "none     12" and table[3].endswith("   0")


def test_the_demo_and_jobs_tables_speak_chinese():
    from lockshop.workshop import demo, jobs_demo

    audit = {"correct": True, "jobs": {"correct": False, "fire_times": 9, "runs": 12,
                                       "duplicate_runs": 3, "orders_expired": 4,
                                       "stock_restored_more_than_once": 1, "reminders": 5,
                                       "duplicate_reminders": 2, "lost_runs": 0}}
    result = jobs_demo.JobsResult("none", 3, audit, expected_correct=False)
    with i18n.language(CHINESE):
        table = jobs_demo.jobs_table([result])
        headers = [i18n._(h) for h in demo.HEADERS]
    assert table.splitlines()[0].split()[:3] == ["定时任务保护方式", "实例数", "触发时刻"]
    assert table.splitlines()[2].split()[-2:] == ["出错", "出错"]  # audit, expected
    assert headers[:6] == ["策略", "实例数", "订单", "已售", "剩余", "超卖"]
    with i18n.language(CHINESE):
        assert (demo._verdict(True), demo._verdict(False)) == ("正确", "出错")
    assert (demo._verdict(True), demo._verdict(False)) == ("correct", "WRONG")


# --- the CLI --------------------------------------------------------------------------

def lockshop(*args: str, language: str | None = "zh_CN.UTF-8", cwd: Path = ROOT,
             **environ: str) -> subprocess.CompletedProcess:
    """``lockshop args`` as a user runs it, with ``LANG=language`` and nothing else choosing."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")}
    env.update({"LANG": language} if language else {}, **environ)
    return subprocess.run([sys.executable, "-m", "lockshop.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def one_line_error(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert lines and "Traceback" not in done.stderr, done.stderr
    return lines[-1]


def test_an_unknown_command_is_refused_in_chinese():
    done = lockshop("nosuch")
    assert done.returncode == 2
    assert done.stderr.startswith("用法：lockshop ")
    assert one_line_error(done).startswith("lockshop：错误：参数 COMMAND：无效的选择：'nosuch'")


def test_a_bad_strategy_name_is_refused_in_chinese_before_anything_starts(tmp_path):
    done = lockshop("demo", "--strategies", "redis,bogus", cwd=tmp_path)
    assert done.returncode == 2
    assert one_line_error(done).startswith("lockshop：错误：没有名为 'bogus' 的策略；可用的策略：")
    assert not any(tmp_path.iterdir())  # no runtime folder: nothing was started


def test_a_bad_lab_id_is_refused_in_chinese():
    done = lockshop("lab", "C999")
    assert done.returncode == 2
    assert one_line_error(done) == ("lockshop：错误：没有名为 'C999' 的实验；"
                                   "用 'lockshop lab list' 查看全部实验")


@pytest.mark.cluster
def test_lab_c11_runs_in_chinese_under_lang_zh_cn_and_in_english_with_lang_en():
    require(redis_server_binary() is not None, "redis-server is not installed")
    done = lockshop("lab", "C11")
    assert done.returncode == 0, done.stdout + done.stderr
    said = done.stdout
    # the title, both halves, a step with what was expected and seen, and the verdict
    assert said.startswith("C11 redis_plain_del: 锁的过期时间短于业务执行时间"), said
    assert "  问题版本：redis_plain_del：SET NX PX 加锁，直接 DEL 释放" in said
    assert "预期：它的 DEL 删掉了 B 的锁 · 观察到：A 释放成功；键存在：否  ✓" in said
    assert "预期：被拒绝：键里是 B 的唯一标识，不是 A 的；锁仍归 B" in said
    assert "=> 结论成立（" in said and "修复版本在相同步骤下保持正确" in said
    assert "expected:" not in said and "observed" not in said and "holds" not in said
    english = lockshop("--lang", "en", "lab", "C11").stdout
    assert "A finishes and releases" in english and "expected: its DEL deletes B's lock" in english
    assert "=> holds (" in english and "预期" not in english


def test_the_lab_list_is_in_chinese():
    said = lockshop("lab", "list").stdout
    assert ("A2  Redis分布式锁唯一标识避免误释放的案例分析（用唯一标识避免误释放别人的锁；"
            "用 WATCH/MULTI 释放；过期时间设多长）") in said
    assert "C11  redis_plain_del" in said and "锁的过期时间短于业务执行时间" in said
    assert "\n文章之外\n" in said and "[需要 Redis，店铺实例]" in said
    assert "个知识点中有" in said


def test_a_bad_value_and_a_missing_argument_are_refused_in_chinese():
    done = lockshop("demo", "--run-time", "soon")
    assert done.returncode == 2
    assert one_line_error(done) == "lockshop demo：错误：参数 --run-time：不是整数：'soon'"
    done = lockshop("lab")
    assert one_line_error(done) == "lockshop lab：错误：缺少以下必需的参数：name"


def test_lang_wins_over_the_environment_and_a_bad_one_is_refused():
    done = lockshop("demo", "--run-time", "soon", "--lang", "en")
    assert one_line_error(done) == ("lockshop demo: error: argument --run-time: "
                                    "not a whole number: 'soon'")
    done = lockshop("--lang=zh-Hans", "lab", "C999", language="C.UTF-8")
    assert one_line_error(done).startswith("lockshop：错误：没有名为 'C999' 的实验")
    done = lockshop("--lang", "fr", "lab", "list", language="en_US.UTF-8")
    assert done.returncode == 2
    assert one_line_error(done) == ("lockshop: error: --lang: no language 'fr'; "
                                    "choose from en, zh_CN")


def test_language_beats_lang_as_in_gettext():
    done = lockshop("lab", "C999", language="C.UTF-8", LANGUAGE="zh_CN")
    assert one_line_error(done).startswith("lockshop：错误：")
    done = lockshop("lab", "C999", language=None)  # nothing set: English
    assert one_line_error(done).startswith("lockshop: error: no lab named 'C999'")


def test_help_is_chinese_and_wrapped_by_terminal_cells():
    done = lockshop("--help", COLUMNS="80")
    assert done.returncode == 0
    assert "显示本帮助信息并退出" in done.stdout and "对每种策略跑一场秒杀" in done.stdout
    assert done.stdout.startswith("用法：lockshop [-h]")
    assert max(width(line) for line in done.stdout.splitlines()) <= 80
    assert "sqlite:///.lockshop/lockshop.db" in done.stdout  # a path is not cut in two
    done = lockshop("demo", "--help", COLUMNS="80")
    usage = done.stdout.splitlines()
    # The usage's next lines stand under the program's name, past the wide "用法：".
    assert usage[1].index("[") == width("用法：lockshop demo ")


#: Three English words in a row: a sentence the catalog did not reach (names, options and
#: metavars are one word, or in capitals, or inside brackets).
ENGLISH_PROSE = re.compile(r"\b[a-z]{2,}(?: [a-z]{2,}){2}\b")


def every_help(parser: argparse.ArgumentParser):
    """(command, its help) for the program and every command and subcommand under it."""
    yield parser.prog, parser.format_help()
    for action in parser._actions:  # argparse keeps its subparsers only there
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from every_help(child)


def test_every_command_s_help_is_chinese():
    from lockshop.cli.language import choose_language
    from lockshop.cli.parser import build_parser

    choose_language(["--lang", "zh_CN"], {})
    try:
        english = {command: [line for line in text.splitlines()
                             if ENGLISH_PROSE.search(re.sub(r"\[[^]]*\]|\{[^}]*\}", "", line))]
                   for command, text in every_help(build_parser())}
    finally:
        choose_language([], {"LANGUAGE": "en"})
    assert len(english) > 10
    assert {command: lines for command, lines in english.items() if lines} == {}


def test_the_audit_and_the_settings_speak_chinese(tmp_path):
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    assert lockshop("--database-url", url, "reset").stdout.strip() == "商品已恢复，订单已清空"
    done = lockshop("--database-url", url, "audit")
    assert done.returncode == 0, done.stderr
    header = done.stdout.splitlines()[0].split()
    assert header[:4] == ["编号", "SKU", "类型", "初始库存"] and "超卖" in header
    assert done.stdout.rstrip().endswith("审计：正确")
    done = lockshop("--database-url", url, "settings", "--business-delay-ms", "5")
    assert done.stdout.startswith("策略 ") and "业务延迟 5 毫秒" in done.stdout


# --- the shop -------------------------------------------------------------------------

@pytest.mark.parametrize(("ask", "chinese"), [
    ({"headers": {"Accept-Language": "zh-CN"}}, True),
    ({"headers": {"Accept-Language": "zh"}}, True),
    ({"headers": {"Accept-Language": "zh-Hans"}}, True),
    ({"headers": {"Accept-Language": "fr, zh-CN;q=0.8, en;q=0.5"}}, True),
    ({"headers": {"Accept-Language": "en-US,en;q=0.9,zh-CN;q=0.8"}}, False),
    ({"headers": {"Accept-Language": "zh-TW, en;q=0.5"}}, False),
    ({"headers": {"Accept-Language": "fr"}}, False),
    ({"headers": {}}, False),
    ({"query_string": {"lang": "zh_CN"}}, True),
    ({"query_string": {"lang": "zh-CN"}, "headers": {"Accept-Language": "en"}}, True),
    ({"query_string": {"lang": "en"}, "headers": {"Accept-Language": "zh-CN"}}, False),
    ({"query_string": {"lang": "fr"}, "headers": {"Accept-Language": "zh-CN"}}, False),
])
def test_the_api_s_message_follows_the_request_and_its_code_stays(client, ask, chinese):
    answer = client.get("/api/products/999", **ask)
    assert answer.status_code == 404
    assert answer.json["error"] == "not_found"
    assert answer.json["message"] == ("找不到商品 999" if chinese else "product 999 not found")
    assert "Accept-Language" in answer.headers["Vary"]


def test_a_chosen_language_sticks_in_a_cookie(client):
    first = client.get("/api/products/999", query_string={"lang": "zh-Hans"})
    assert "lang=zh_CN" in first.headers["Set-Cookie"]
    later = client.get("/api/products/999", headers={"Accept-Language": "en"})
    assert later.json["message"] == "找不到商品 999"  # the cookie outranks the browser
    client.get("/", query_string={"lang": "en"})
    assert client.get("/api/products/999").json["message"] == "product 999 not found"


CHINESE_REQUEST = {"Accept-Language": "zh-CN"}


@pytest.mark.parametrize(("method", "path", "body", "status", "code", "message"), [
    ("post", "/api/orders", {"product_id": 0}, 422, "unprocessable",
     "'product_id'：取值应大于或等于 1，实际是 0"),
    ("post", "/api/orders", {"product_id": 1, "colour": "red"}, 400, "bad_request",
     "'colour'：不允许多余的字段"),
    ("post", "/api/orders", {"product_id": 1, "quantity": 101}, 422, "unprocessable",
     "'quantity'：取值应小于或等于 100，实际是 101"),
    ("post", "/api/orders", {"product_id": 3, "quantity": 2}, 422, "unprocessable",
     "一张门票订单只能买一个座位（quantity 为 1）"),
    ("post", "/api/orders/12345/pay", None, 404, "not_found", "找不到订单 12345"),
    ("delete", "/api/products", None, 405, "method_not_allowed", "这个地址不接受该请求方法"),
    ("get", "/no/such/page", None, 404, "not_found", "这个地址上什么也没有"),
])
def test_api_errors_in_chinese(client, method, path, body, status, code, message):
    answer = getattr(client, method)(path, json=body, headers=CHINESE_REQUEST)
    assert (answer.status_code, answer.json["error"], answer.json["message"]) == (
        status, code, message)


def test_a_taken_seat_and_a_paid_order_in_chinese(client):
    seat = client.post("/api/orders", json={"product_id": 3, "seat": "A1"})
    assert seat.status_code == 201
    taken = client.post("/api/orders", json={"product_id": 3, "seat": "A1"},
                        headers=CHINESE_REQUEST)
    assert (taken.status_code, taken.json["error"], taken.json["message"]) == (
        409, "seat_taken", "座位 A1 已被占用")
    assert taken.json["seat"] == "A1"  # the details stay as they are
    paid = client.post(f"/api/orders/{seat.json['id']}/pay")
    again = client.post(f"/api/orders/{seat.json['id']}/pay", headers=CHINESE_REQUEST)
    assert paid.status_code == 200 and again.json["error"] == "order_not_pending"
    assert again.json["message"] == f"订单 {seat.json['id']} 的状态是 paid，不是待支付（pending）"


def test_lazy_strings_in_a_json_answer_are_said_in_the_request_s_language(app):
    from flask import jsonify

    with app.test_request_context(headers=CHINESE_REQUEST):
        assert jsonify({"title": i18n.lazy_gettext("Flash sale")}).json == {"title": "秒杀"}
    with app.test_request_context():
        assert jsonify({"title": i18n.lazy_gettext("Flash sale")}).json == {"title": "Flash sale"}


def test_the_pages_speak_the_request_s_language(client):
    page = client.get("/", headers=CHINESE_REQUEST).get_data(as_text=True)
    assert '<html lang="zh-CN"' in page and "整个集群使用的策略" in page
    assert "由 <strong>test</strong> 提供服务" in page
    assert 'href="/?lang=en"' in page  # the switch to the other language
    buy = client.get("/products/3", headers=CHINESE_REQUEST).get_data(as_text=True)
    assert "随便一个空座" in buy and "重复订座" in buy and "返回仪表盘" in buy
    english = client.get("/products/1").get_data(as_text=True)
    assert '<html lang="en"' in english and "back to the dashboard" in english
    bought = client.post("/products/1", data={"quantity": "1"}, headers=CHINESE_REQUEST)
    assert "订单 1 已由 test 下单" in bought.get_data(as_text=True)


def test_the_script_catalog_is_served_for_every_spelling_of_a_language(client):
    chinese = client.get("/i18n/zh-CN.json")
    assert chinese.status_code == 200 and chinese.mimetype == "application/json"
    assert chinese.json["language"] == CHINESE and chinese.json["nplurals"] == 1
    assert chinese.json["messages"]["Buy"] == "购买"
    assert chinese.json["plurals"]["expected %s argument"] == ["需要 %s 个参数值"]
    assert client.get("/i18n/zh_CN.json").json == chinese.json
    assert client.get("/i18n/fr.json").json["messages"] == {}  # English: the code's own
    again = client.get("/i18n/zh-CN.json", headers={"If-None-Match": chinese.headers["ETag"]})
    assert again.status_code == 304
    with client.get("/static/i18n.js") as answer:  # a file: closed when read
        script = answer.get_data(as_text=True)
    assert "window.i18n" in script and "dataset.i18nCatalog" in script


# --- the report's charts --------------------------------------------------------------

REPORT_ROWS = [
    {"strategy": "none", "instances": 3, "scenario": "flash_sale", "correct": False,
     "oversold": 12, "double_booked_seats": 1, "orders_per_s": 80.5, "p95_ms": 120.0},
    {"strategy": "redis", "instances": 3, "scenario": "seat_sale", "correct": True,
     "oversold": 0, "double_booked_seats": 0, "orders_per_s": 60.0, "p95_ms": 180.0},
]


def require_chinese_font():
    from lockshop.workshop.report import CJK_FONT_FILES
    require(any(Path(p).is_file() for p in CJK_FONT_FILES),
            "fonts-wqy-zenhei is not installed (./run installs it)")


def test_the_report_s_charts_draw_chinese_with_a_cjk_font(tmp_path):
    """matplotlib warns of each glyph its fonts lack: filterwarnings=error fails on it."""
    require_chinese_font()
    from lockshop.workshop.report import _charts, chinese_fonts

    assert chinese_fonts()
    with i18n.language(CHINESE):
        charts = _charts(REPORT_ROWS, tmp_path)
    for name in charts.values():
        assert (tmp_path / Path(name).name).read_bytes()[:4] == b"\x89PNG"


def test_without_a_cjk_font_the_chinese_would_be_missing_glyphs(tmp_path):
    require_chinese_font()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context({"font.family": ["DejaVu Sans"]}):
        figure, axis = plt.subplots()
        axis.set_title("超卖件数")
        with pytest.warns(UserWarning, match="missing from font"):
            figure.savefig(tmp_path / "boxes.png")
        plt.close(figure)


# --- the pages' scripts, in a real Chromium -------------------------------------------

@pytest.fixture
def served(app):
    """The app on a real HTTP server of its own, for a browser."""
    import threading

    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(10)


@pytest.fixture
def page():
    with chromium() as browser:
        errors: list[str] = []
        page = browser.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page
    assert errors == []


SAY = """async () => {
    await i18n.ready;
    return [i18n.language, i18n._("Buy"),
            i18n._("%(left)s of %(initial)s left", {left: 3, initial: 40}),
            i18n.ngettext("expected %s argument", "expected %s arguments", 2),
            i18n._("a sentence the catalog does not have")];
}"""


@pytest.mark.browser
def test_a_page_s_script_reads_the_catalog_of_the_page_s_language(served, page):
    page.goto(f"{served}/products/3?lang=zh-CN")
    assert page.evaluate(SAY) == ["zh_CN", "购买", "剩余 3 / 40", "需要 %s 个参数值",
                                  "a sentence the catalog does not have"]
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    with page.expect_navigation():
        page.click("text=English")  # the switch: the cookie follows
    assert page.evaluate(SAY) == ["en", "Buy", "3 of 40 left", "expected %s arguments",
                                  "a sentence the catalog does not have"]
    page.goto(f"{served}/")
    assert page.locator("html").get_attribute("lang") == "en"
