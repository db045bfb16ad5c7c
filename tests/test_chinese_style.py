"""The Chinese style guide (docs/chinese-style.md), held: one word per idea, full-width
punctuation, a space between Chinese and Latin letters or figures, in the message catalog,
the Chinese pages (docs/**/*.zh.md), the Chinese skeletons and the lessons' Chinese.

The term table is the guide's own (its "Terms" table): a failure names the file, the line,
the word used and the word to use. Each rule is also shown to catch what it is for on a
text broken on purpose. And the Chinese skeletons keep the English ones' code exactly;
the ``locks`` package's English reasons are all said through the catalog.
"""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from helpers import require
from lockshop import catalog as catalogs
from lockshop.cluster.redis_servers import redis_server_binary
from lockshop.exercises import EXERCISES
from lockshop.exercises.skeleton_text import skeleton_path, skeleton_text
from lockshop.workshop.staging.record import ARTICLES
from shop.i18n import CHINESE, _, language

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GUIDE = DOCS / "chinese-style.md"
CJK = "\u4e00-\u9fff"
HAN = re.compile(f"[{CJK}]")


# --- the term table ---------------------------------------------------------------------

@dataclass(frozen=True)
class Term:
    english: str
    word: str  # the one to use
    avoid: tuple[str, ...]  # the variants not to use


def term_table(page: Path = GUIDE) -> list[Term]:
    """The rows of the page's table whose header is ``| English | 用词 | 不用 | ...``."""
    terms, inside = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[:3] == ["English", "用词", "不用"]:
            inside = True
            continue
        if not inside:
            continue
        if not line.startswith("|"):
            break
        if set(cells[0]) <= set("-: "):
            continue
        avoid = tuple(w.strip().strip("`") for w in re.split(r"[、,，]", cells[2])
                      if w.strip() and w.strip() != "—")
        terms.append(Term(cells[0], cells[1], avoid))
    return terms


@dataclass(frozen=True)
class Line:
    where: str  # "docs/guide/index.zh.md:12", or the catalog entry
    text: str


def misuses(lines: list[Line], terms: list[Term]) -> list[str]:
    """Every use of a variant the table says not to use: where, the word, the right one."""
    variants = sorted(((v, t) for t in terms for v in t.avoid), key=lambda vt: -len(vt[0]))
    found = []
    for line in lines:
        text = line.text
        for variant, term in variants:  # the longest first: 评判程序 is not also 评判
            if variant in text:
                found.append(f"{line.where}: '{variant}' → '{term.word}' "
                             f"({term.english}): {line.text.strip()[:80]}")
                text = text.replace(variant, "\0")
    return found


# --- what is Chinese prose, and what is not ------------------------------------------------

#: Placeholders, inline code, HTML tags, links' targets, quoted names and command lines:
#: not prose. An article's title or a quotation of it (“...”) keeps the article's words.
NOT_PROSE = re.compile(r"%\(\w+\)[-#0 +]?\d*(?:\.\d+)?[a-z]|%[sd]|`[^`]*`|<[^>]+>"
                       r"|\]\([^)]*\)|'[^'\n]*'|\{[^}\n]*\}|“[^”\n]*”"
                       # a notation with colons and no spaces: host:pid:线程号, 文件:行号
                       f"|[\\w{CJK}]+(?::[\\w{CJK}]+)+")
#: The articles' titles and authors, as published (longest first: A0's title is in A4's).
ARTICLE_NAMES = tuple(sorted({name for article in ARTICLES.values()
                              for name in (article.title, article.by) if name},
                             key=len, reverse=True))
#: A page's line that says what an article says, in its words: "- **A4**（...）：..."
ARTICLE_CITATION = re.compile(r"^\s*- \*\*\[?A[0-4]\b")


def prose(text: str) -> str:
    for name in ARTICLE_NAMES:
        text = text.replace(name, "\0")
    return NOT_PROSE.sub("\0", text)


#: Chinese next to a Latin letter or a figure with no space between.
NO_SPACE = re.compile(f"[{CJK}][A-Za-z0-9]|[A-Za-z0-9][{CJK}]")
#: Half-width punctuation in a Chinese sentence: after a Chinese character (and not
#: starting code, "a:b", "1.5"), or a bracket around Chinese.
HALF_WIDTH = re.compile(f"[{CJK}][,;:?!](?=\\s|$|[{CJK}])|[{CJK}]\\(|\\([{CJK}]|[{CJK}]\\)")
ARROW = re.compile(f"[{CJK}]\\s*->|->\\s*[{CJK}]")


def style_faults(lines: list[Line]) -> list[str]:
    found = []
    for line in lines:
        text = prose(line.text)
        if not HAN.search(text):
            continue
        for rule, pattern in (("a space between Chinese and Latin letters or figures",
                               NO_SPACE),
                              ("full-width punctuation in a Chinese sentence", HALF_WIDTH),
                              ("'→', not '->'", ARROW)):
            hit = pattern.search(text)
            if hit:
                near = text[max(0, hit.start() - 12):hit.end() + 12].replace("\0", "…")
                found.append(f"{line.where}: {rule}: …{near}…")
    return found


# --- the texts held ---------------------------------------------------------------------

def catalog_lines() -> list[Line]:
    po = catalogs.read_catalog(CHINESE)
    lines = []
    for message in po:
        if not message.id:
            continue
        where = f"{catalogs._first(message.id)!r} (shop/locale/zh_CN/LC_MESSAGES/messages.po)"
        for string in (message.string if isinstance(message.string, tuple)
                       else (message.string,)):
            lines.append(Line(where, string))
    return lines


def zh_pages() -> list[Path]:
    """The Chinese pages written by hand: not the style guide (its table names the variants),
    not the lesson pages the handbook's hook writes from docs/lessons.yml (held below)."""
    style = {GUIDE.with_suffix(".zh.md")}
    return sorted(p for p in DOCS.rglob("*.zh.md")
                  if p not in style and not p.is_relative_to(DOCS / "lessons"))


def page_lines(page: Path, *, code: bool = False) -> list[Line]:
    """The page's prose lines, not an article's words; with ``code``, the fenced blocks'
    lines too (a sample of what lockshop prints says its terms as the catalog does)."""
    lines, fenced = [], False
    for number, text in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if text.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if (fenced and not code) or ARTICLE_CITATION.match(text):
            continue
        lines.append(Line(f"{page.relative_to(ROOT)}:{number}", text))
    return lines


LESSONS = DOCS / "lessons.yml"


def lesson_lines() -> list[Line]:
    """Every Chinese text of the lessons' data file (its ``zh`` halves)."""
    where = LESSONS.relative_to(ROOT)
    lines = []

    def walk(value, path: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key == "zh":
                    lines.append(Line(f"{where} {path}", inner))
                else:
                    walk(inner, f"{path}.{key}" if path else str(key))

    walk(yaml.safe_load(LESSONS.read_text(encoding="utf-8")), "")
    return lines


def skeleton_lines() -> list[Line]:
    lines = []
    for exercise in EXERCISES.values():
        path = skeleton_path(exercise, CHINESE)
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            lines.append(Line(f"{path.relative_to(ROOT)}:{number}", text))
    return lines


# --- the rules, on the project's texts ------------------------------------------------------

def test_the_guide_has_a_term_table_and_both_pages_give_the_same_one():
    terms = term_table()
    assert len(terms) >= 20, "docs/chinese-style.md: no '| English | 用词 | 不用 |' table"
    assert term_table(GUIDE.with_suffix(".zh.md")) == terms
    words = [t.word for t in terms]
    assert len(set(words)) == len(words), "a word given for two ideas"
    for term in terms:  # a variant is never another idea's word
        assert not set(term.avoid) & set(words), term


def test_the_term_table_agrees_with_the_glossary():
    glossary = yaml.safe_load((DOCS / "glossary.yml").read_text(encoding="utf-8"))["terms"]
    chinese = {entry["term"]: str(entry["zh"]) for entry in glossary}
    for term in term_table():
        if term.english in chinese:
            assert term.word.split("；")[0].split(" ")[0] in chinese[term.english], term
            assert not any(v in chinese[term.english] for v in term.avoid), term


def test_the_catalog_uses_the_term_table_s_words():
    assert misuses(catalog_lines(), term_table()) == []


def hook_lines() -> list[Line]:
    """Any Chinese the handbook's hook writes into the pages itself (its words and the
    registry's descriptions are the catalog's, held above)."""
    hook = DOCS / "hooks" / "handbook.py"
    return [Line(f"{hook.relative_to(ROOT)}:{number}", text) for number, text
            in enumerate(hook.read_text(encoding="utf-8").splitlines(), start=1)
            if HAN.search(text)]


def test_the_chinese_pages_use_the_term_table_s_words():
    pages = zh_pages()
    assert len(pages) > 20
    assert misuses([line for page in pages for line in page_lines(page, code=True)]
                   + hook_lines(), term_table()) == []


def test_the_lessons_and_the_skeletons_use_the_term_table_s_words():
    assert misuses(lesson_lines() + skeleton_lines(), term_table()) == []


def test_the_catalog_s_punctuation_and_spacing():
    assert style_faults(catalog_lines()) == []


def test_the_chinese_pages_punctuation_and_spacing():
    assert style_faults([line for page in zh_pages() for line in page_lines(page)]) == []


def test_the_lessons_and_skeletons_punctuation_and_spacing():
    assert style_faults(lesson_lines() + skeleton_lines()) == []


def test_every_lab_s_title_is_the_same_in_the_catalog_and_in_the_lessons():
    """The CLI, the console and the handbook say a lab's title through the catalog: one
    title, not two translations of it. The lessons' data file holds no title, and every
    lab's title has its Chinese in the catalog (tests/test_docs.py reads it on the page)."""
    from lockshop.workshop.labs import LABS

    data = yaml.safe_load(LESSONS.read_text(encoding="utf-8"))
    assert [lesson for lesson, record in data.items() if "title" in record
            or "title_zh" in record] == []
    with language(CHINESE):
        untranslated = [lab.id for lab in LABS.values() if _(lab.title) == lab.title]
    assert untranslated == []


# --- the rules catch what they are for --------------------------------------------------------

def test_a_variant_is_found_with_its_place_and_the_right_word(tmp_path):
    page = tmp_path / "x.zh.md"
    page.write_text("# 页\n\n请输入教室码。\n\n```\n教室码 in code\n```\n"
                    "- **A0**（分布式锁）：文章说临时有序节点。\n", encoding="utf-8")
    terms = [Term("room code", "房间码", ("教室码", "课堂码")),
             Term("ephemeral sequential node", "临时顺序节点", ("临时有序节点",))]
    lines = [Line(f"x.zh.md:{n}", t) for n, t in enumerate(page.read_text().splitlines(), 1)
             if t != "教室码 in code" and not ARTICLE_CITATION.match(t)]
    assert misuses(lines, terms) == [
        "x.zh.md:3: '教室码' → '房间码' (room code): 请输入教室码。"]


def test_the_term_table_is_read_from_a_markdown_table(tmp_path):
    page = tmp_path / "style.md"
    page.write_text("# Style\n\n| English | 用词 | 不用 | 说明 |\n| --- | --- | --- | --- |\n"
                    "| shop | 商店 | 店铺 | |\n| soak | 长稳测试 | 浸泡测试、`soak 测试` | |\n"
                    "| lesson | 知识点 | — | |\n\nAfter.\n", encoding="utf-8")
    assert term_table(page) == [Term("shop", "商店", ("店铺",)),
                                Term("soak", "长稳测试", ("浸泡测试", "soak 测试")),
                                Term("lesson", "知识点", ())]


@pytest.mark.parametrize(("text", "fault"), [
    ("锁的key已过期", "a space between Chinese and Latin"),
    ("卖出3件", "a space between Chinese and Latin"),
    ("结论成立(0.8 秒)", "full-width punctuation"),
    ("问题版本: 出错", "full-width punctuation"),
    ("所有者 -> 次数", "'→', not '->'"),
])
def test_a_punctuation_or_spacing_fault_is_found(text, fault):
    faults = style_faults([Line("x.po", text)])
    assert len(faults) == 1 and faults[0].startswith(f"x.po: {fault}"), faults


@pytest.mark.parametrize("text", [
    "锁的 key 已过期", "卖出 3 件", "结论成立（0.8 秒）", "问题版本：出错", "“所有者 → 次数”",
    "用 `SET k v NX PX 300` 加锁", "%(count)s件", "分布式锁用Redis or Zookeeper?（库存超卖）",
    "（文件:行号）", "看“基于Redis实现分布式锁”一节",
])
def test_what_is_not_prose_or_is_right_passes(text):
    assert style_faults([Line("x.po", text)]) == []


# --- the skeletons in Chinese --------------------------------------------------------------

#: Four English words in a row: a sentence left untranslated (code is one word, or quoted).
ENGLISH = re.compile(r"\b[a-z]{2,}(?: [a-z]{2,}){3}\b")


def _code(source: str) -> str:
    """The skeleton's code: no docstrings, no comments, no NotImplementedError's words."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                and isinstance(first.value.value, str):
            body[0] = ast.Pass()
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "NotImplementedError":
            node.args = []
    return ast.dump(tree)


def _comments(source: str) -> list[str]:
    return [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type == tokenize.COMMENT]


@pytest.mark.parametrize("number", sorted(EXERCISES))
def test_a_chinese_skeleton_is_the_english_one_in_chinese(number):
    from lockshop.exercises.grader import todos_left

    exercise = EXERCISES[number]
    english, chinese = skeleton_text(exercise, "en"), skeleton_text(exercise, "zh")
    assert skeleton_path(exercise, "zh").name == exercise.file.removesuffix(".py") + ".zh.py"
    assert _code(chinese) == _code(english), "the code differs: change both skeletons"
    english_todos = todos_left(skeleton_path(exercise, "en"))
    chinese_todos = todos_left(skeleton_path(exercise, "zh"))
    assert len(chinese_todos) == len(english_todos) > 0
    for (_line, todo), (_line2, english_todo) in zip(chinese_todos, english_todos):
        assert todo.startswith("TODO ")  # the grader's marker
        numbers = re.compile(r"TODO ([\d ,和and]+)")
        assert re.findall(r"\d+", numbers.match(todo)[1]) == \
            re.findall(r"\d+", numbers.match(english_todo)[1]), (todo, english_todo)
        assert not ENGLISH.search(prose(todo)), todo
    docstring = ast.get_docstring(ast.parse(chinese))
    assert HAN.search(docstring) and not ENGLISH.search(prose(docstring)), docstring
    for comment in _comments(chinese):
        assert not ENGLISH.search(prose(comment)), comment
        if "TODO" in comment:
            assert HAN.search(comment), comment


def test_skeleton_text_follows_the_language_and_falls_back_to_english(monkeypatch):
    monkeypatch.setenv("LOCKSHOP_INVOKED_AS", "./run")  # as the project's run script says
    exercise = EXERCISES["3"]
    assert skeleton_text("3", "zh_CN") == skeleton_text(exercise, "zh-Hans")
    assert "练习 3" in skeleton_text(exercise, "zh")
    assert skeleton_text(exercise, "en") == exercise.skeleton.read_text(encoding="utf-8")
    assert skeleton_text(exercise, "fr") == skeleton_text(exercise, None) == \
        skeleton_text(exercise, "en")
    # Its "check it" line says the command the way the reader runs lockshop.
    monkeypatch.setenv("LOCKSHOP_INVOKED_AS", "../lockshop/run")
    assert "Check it:   ../lockshop/run exercise check 3 token_lock.py" in skeleton_text(
        exercise, "en")


# --- the locks package's reasons ---------------------------------------------------------------

def _literal_reasons() -> list[tuple[str, str]]:
    """(where, the reason as a template) for every LockLost raised with a literal reason in
    locks/ and shop/: an f-string's fields become %(name)s."""
    found = []
    for path in sorted([*(ROOT / "locks").rglob("*.py"), *(ROOT / "shop").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "LockLost" \
                    and len(node.args) == 2:
                reason = node.args[1]
                if isinstance(reason, ast.Constant):
                    text = reason.value
                elif isinstance(reason, ast.JoinedStr):
                    text = "".join(part.value if isinstance(part, ast.Constant) else "%(x)s"
                                   for part in reason.values)
                else:
                    continue
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", text))
    for path in [ROOT / "shop" / "jobs" / "guards.py"]:  # the reasons handed to _hold_row
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "_hold_row":
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.args[-1].value))
    return found


def test_every_reason_the_locks_give_is_said_through_the_catalog():
    from shop.i18n.lock_errors import REASONS, say_reason

    reasons = _literal_reasons()
    assert len(reasons) >= 10
    shapes = {re.sub(r"%\(\w+\)s", "%(x)s", template) for template in REASONS}
    assert [(where, text) for where, text in reasons if text not in shapes] == []
    with language(CHINESE):
        said = say_reason("the 200 ms lease expired before release")
    assert said == "锁已在释放前过期，过期时间为 200 毫秒"
    assert say_reason("a reason of a student's own") == "a reason of a student's own"


def _lockshop_zh(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")}
    return subprocess.run([sys.executable, "-m", "lockshop.cli", "--lang", "zh", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_exercise_start_under_zh_writes_the_chinese_skeleton_and_the_grader_says_its_todos(
        tmp_path):
    require(redis_server_binary() is not None, "redis-server is not installed")
    started = _lockshop_zh("exercise", "start", "3", str(tmp_path), cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    written = (tmp_path / "token_lock.py").read_text(encoding="utf-8")
    assert written == skeleton_text(EXERCISES["3"], "zh")
    checked = _lockshop_zh("exercise", "check", "3", "token_lock.py", cwd=tmp_path)
    said = checked.stdout
    assert checked.returncode == 1, said + checked.stderr
    assert "还有 TODO（第 " in said and "还没有写：TODO 1：" in said
    assert "TODO 2 和 3：写出 RELEASE" in said
    # the holder the grader kills died of the TODO: said in Chinese, not Python's words
    assert "NotImplementedError" not in said and "exited" not in said
    assert "它退出了（状态码 1）：还没有写：TODO 1：" in said
    english = re.compile(r"\b[a-z]{2,}(?: [a-z]{2,}){3}\b")
    assert [line for line in said.splitlines() if english.search(prose(line))] == []


# --- English left in the catalog's Chinese ---------------------------------------------------

#: What is code in a catalog's Chinese sentence though nothing marks it: an ASCII-quoted
#: literal, a command line, an SQL statement or a Redis command up to the next Chinese, a
#: call, a dotted name.
CODE_IN_SENTENCE = re.compile(
    r'"[^"\n]*"'
    f"|(?:\\./run|\\0|lockshop|apt-get|redis-cli)(?: [^\\s，。；：（）、{CJK}]+)+"
    f"|\\b(?:SELECT|UPDATE|DELETE|INSERT|SET|HINCRBY|WHERE|LINDEX)\\b[^{CJK}，。；（）]*"
    r"|[\w.]+\((?:[^()]|\([^()]*\))*\)"
    r"|\b\w+(?:\.\w+)+")
#: A word, not part of an identifier, a path, an option or an assignment.
WORD = re.compile(r"(?<![\w\-./:=$@#\\])[A-Za-z]+(?:-[A-Za-z]+)*(?![\w\-(=\[/])")
#: Names a Chinese engineer writes in English: products, libraries, headers, keys.
KEPT_IN_ENGLISH = frozenset("""
    Redis Redlock Lua ZooKeeper MariaDB PostgreSQL SQLite Sentinel Redisson Curator Quartz
    Python Java Go Tomcat Debian Locust Gradescope Markdown GitHub kazoo pottery redis-py
    Authorization Bearer Content-Type Idempotency-Key Retry-After X-Room-Code X-Student
    Ctrl-C Esc Tab Candidate Lock True False None
    Docker docker-compose cgroup debootstrap qemu initramfs""".split())
#: Words of code, commands, settings and values a Chinese sentence names as they are.
CODE_WORDS = frozenset("""
    acquire release raise sleep reentrant entries started elapsed now owner name job token
    version rowcount quantity sku pipeline since lesson null true false pending code
    create delete fsync zxid znode mutex initdb mariadbd mariadb-install-db postgres
    redis-server root en start check package database shop machine lockshop
    none redis atomic sqlite postgresql mysql
    docker compose up down import apt apt-get master worker""".split())


def english_words(text: str) -> list[str]:
    """The English words of a Chinese sentence outside its code, not allowed above. An
    identifier (ALLCAPS, camelCase, snake_case, one letter) is code and passes."""
    return [word for word in WORD.findall(CODE_IN_SENTENCE.sub("\0", prose(text)))
            if len(word) > 1 and not word.isupper() and not re.search(r"[a-z][A-Z]", word)
            and word not in KEPT_IN_ENGLISH | CODE_WORDS]


def test_the_catalog_s_chinese_has_no_english_left():
    left = [f"{line.where}: {english_words(line.text)}: {line.text[:80]}"
            for line in catalog_lines() if HAN.search(line.text) and english_words(line.text)]
    assert left == []


@pytest.mark.parametrize(("text", "left"), [
    ("实际：你的锁抛出了 LockLost：lost while held: the lease expired", ["lost", "while", "held",
                                                                     "the", "lease", "expired"]),
    ("“实验”（Labs）列表 → C11 → “运行”（Run）", ["Labs", "Run"]),
    ("使用评分程序自己的 redis 服务器 (instances)", ["instances"]),
    ("检查已中断（interrupted, check again）", ["interrupted", "again"]),
])
def test_english_left_in_a_chinese_sentence_is_found(text, left):
    assert english_words(text) == left


@pytest.mark.parametrize("text", [
    "用 `SET k v NX PX 300` 加锁", "%(lockshop)s exercise check %(id)s %(file)s",
    "UPDATE products SET stock = stock - :q WHERE stock >= :q，只在改动了一行时才卖出",
    "self.run(script, keys=[self.key], args=[self.token])：在 Lua 里核对并删除",
    "raise LockLost(self.name, \"not the leader\")", "redis-py 的 Lock，Redis 服务器",
    "is_leader() 返回 True", "ensure_held() 抛出 LockLost", "持有者是 host:pid:线程号",
])
def test_code_names_and_identifiers_in_a_chinese_sentence_pass(text):
    assert english_words(text) == []


# --- True and False in a Chinese sentence -------------------------------------------------------

def _bool_shaped(node: ast.expr, names: set[str]) -> bool:
    """An expression that is a bool as written: a comparison, ``not``, ``bool()``, a name
    bound to one of these in the same function, and ``and``/``or`` of them."""
    if isinstance(node, ast.Compare) or (isinstance(node, ast.UnaryOp)
                                         and isinstance(node.op, ast.Not)):
        return True
    if isinstance(node, ast.BoolOp):
        return all(_bool_shaped(value, names) for value in node.values)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    if isinstance(node, ast.Call):
        return getattr(node.func, "id", "") in ("bool", "isinstance", "any", "all")
    return isinstance(node, ast.Name) and node.id in names


def booleans_said(source: str, where: str) -> list[str]:
    """Every ``_()`` or ``lazy_gettext()`` given a bool to format: Python says it True or
    False, in the middle of a Chinese sentence too. ``yes_no()`` says it in the language."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name) and _bool_shaped(node.value, names):
                names.add(node.targets[0].id)
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in (
                    "_", "lazy_gettext"):
                found += [f"{where}:{node.lineno}: {keyword.arg}={ast.unparse(keyword.value)}"
                          for keyword in node.keywords if _bool_shaped(keyword.value, names)]
    return found


def test_what_the_grader_and_the_labs_observe_says_yes_or_no_not_true_or_false():
    files = sorted([*(ROOT / "lockshop" / "exercises").rglob("*.py"),
                    *(ROOT / "lockshop" / "workshop").rglob("*.py")])
    assert len(files) > 40
    assert [said for path in files for said in booleans_said(
        path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))] == []


def test_a_bool_given_to_the_catalog_is_found():
    source = ('def check(grading):\n    a_in = bool(grading.take())\n'
              '    b_in = grading.other() is not None\n'
              '    return _("A holds: %(a)s, B holds: %(b)s", a=a_in, b=b_in),'
              ' _("%(n)s left", n=len(grading.left)), _("%(x)s", x=yes_no(a_in))\n')
    assert booleans_said(source, "x.py") == ["x.py:4: a=a_in", "x.py:4: b=b_in"]


def test_a_check_s_observation_says_yes_and_no_in_chinese():
    from shop.i18n import yes_no

    with language(CHINESE):
        said = _("A holds: %(a)s, B holds: %(b)s", a=yes_no(True), b=yes_no(False))
    assert said == "A 持有锁：是，B 持有锁：否"


# --- a LockLost's reasons, where a Chinese reader meets them --------------------------------------

#: ``LockLost(self.name, "reason")`` as a skeleton's comment or docstring tells the student
#: to raise it.
LOCK_LOST_REASON = re.compile(r"LockLost\(self\.name, \"([^\"]*)\"\)")


def test_a_chinese_skeleton_s_lock_lost_reasons_are_the_english_ones_the_catalog_says():
    """The reason a student's lock raises reaches the board and every reader: the English
    one, listed in shop.i18n.lock_errors, is said in each reader's language; a Chinese one
    would reach an English reader as it is. The English and Chinese skeletons ask for the
    same reasons."""
    from shop.i18n.lock_errors import REASONS, say_reason

    shapes = {re.sub(r"%\(\w+\)s", "%(x)s", template) for template in REASONS}
    asked = {}
    for exercise in EXERCISES.values():
        chinese = skeleton_path(exercise, CHINESE).read_text(encoding="utf-8")
        english = skeleton_path(exercise, "en").read_text(encoding="utf-8")
        reasons = LOCK_LOST_REASON.findall(chinese)
        assert sorted(set(reasons)) == sorted(set(LOCK_LOST_REASON.findall(english))), \
            exercise.file
        asked.update({reason: exercise.file for reason in reasons})
    assert len(asked) >= 3
    assert {reason: file for reason, file in asked.items() if reason not in shapes} == {}
    with language(CHINESE):
        assert [reason for reason in asked if say_reason(reason) == reason] == []


def test_the_grader_says_a_lock_error_in_the_reader_s_language(tmp_path):
    """Not ``LockLost：lost while held: the lease expired``: the catalog's words."""
    from locks import LockLost
    from lockshop.exercises.grader import run_check
    from lockshop.exercises.grading import Check

    def loses_its_lock(grading) -> tuple[str, bool]:
        raise LockLost("timeout-2", "the lease expired")

    check = Check("C11", "A releases", "refused", "compare first", loses_its_lock)
    with language(CHINESE):
        observed = run_check(check, None, source=tmp_path / "token_lock.py").observed
    assert observed == "你的锁抛出了 LockLost：持有期间丢失了锁 timeout-2：锁过期了"
    assert english_words(observed) == []


def test_the_verdict_line_reads_as_chinese():
    """The line every student reads last: '12 项检查中通过 8 项', not '12 项检查通过 8 项'."""
    from lockshop.exercises.results import CheckResult, Grade

    def result(lesson: str, passed: bool) -> CheckResult:
        return CheckResult(lesson, "a step", "right", "seen", passed, "a hint",
                           status="passed" if passed else "failed")

    failed = Grade("4", "reentrant_lock.py:ReentrantLock", seconds=5.0,
                   results=[result("C13", True), result("C49", False), result("C27", True)])
    passed = Grade("4", "reentrant_lock.py:ReentrantLock", seconds=5.0,
                   results=[result("C13", True), result("C27", True)])
    with language(CHINESE):
        assert failed.summary() == ("  => 练习 4 未通过：3 项检查中通过 2 项；"
                                    "第一个未通过的知识点：C49（用时 5 秒）")
        assert passed.summary() == "  => 练习 4 通过：2/2 项检查全部通过（用时 5 秒）"
