"""The console in the reader's language, in a real Chromium on a real ``lockshop up``:
a browser that asks for zh-CN reads Chinese (the page, its script's words, and the lab
list the control sends), one that asks for en-US reads English, and the page's switch
changes the language and keeps it on the next visit."""

from __future__ import annotations

import os
import re

import pytest
import requests

from helpers import chromium, lockshop_up, ports_for_up, require
from lockshop.cluster.redis_servers import redis_server_binary

pytestmark = [pytest.mark.cluster, pytest.mark.browser]

#: The control's address, as the module's ``lockshop up`` printed it.
CONTROL: list[str] = []

#: What a reader sees of each language, drawn by the template (tabs, headings), by the
#: script (the role line, the Run buttons) and by the control (a lab's title).
CHINESE = ["集群", "实时秒杀", "实验", "练习", "持有情况：最近", "学员：只读", "运行",
           "锁的过期时间短于业务执行时间：直接 DEL 会误删下一个持有者的锁"]
ENGLISH = ["Cluster", "Live sale", "Labs", "Exercises", "Holds over the last",
           "student: read-only", "Run",
           "A lease shorter than the work: a plain DEL frees the next holder's lock"]
#: English that must be gone from a Chinese page (single words like "Run" could be code).
ENGLISH_LABELS = ["Live sale", "Reset the products", "Settings, for every instance at once",
                  "Run a lab to see its steps here.", "student: read-only", "No result posted yet.",
                  "A lease shorter than the work"]


@pytest.fixture(scope="module")
def console_url(tmp_path_factory):
    require(redis_server_binary() is not None, "redis-server is not installed")
    folder = tmp_path_factory.mktemp("console-language")
    with lockshop_up("--instances", "1", "--port", str(ports_for_up(1)), cwd=folder,
                     env={**os.environ, "LOCKSHOP_ADMIN_TOKEN": "language-test"},
                     language="zh_CN") as text:
        # up itself speaks the shell's language: here, Chinese
        console = re.search(r"控制台：(\S+)", text)
        control = re.search(r"控制端（实验、故障、秒杀）：(\S+)", text)
        assert console and control, text
        assert "个实例，数据库" in text and text.rstrip().endswith("Ctrl-C 全部停止。")
        CONTROL.append(control.group(1))
        yield console.group(1)


@pytest.fixture(scope="module")
def browser():
    with chromium() as browser:
        yield browser


def open_console(browser, url: str, locale: str):
    """A fresh browser (no cookie) asking for ``locale``; the console once its lab list,
    which comes from the control, is drawn."""
    context = browser.new_context(locale=locale)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.wait_for_selector("#lab-list li[data-lab='C11']")
    return context, page, errors


def text_of(page) -> str:
    page.wait_for_function("document.getElementById('role').textContent !== ''")
    return page.locator("body").inner_text() + page.locator("#lab-list").text_content()


def test_a_browser_that_asks_for_chinese_reads_chinese(browser, console_url):
    context, page, errors = open_console(browser, console_url, "zh-CN")
    said = text_of(page)
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    assert [word for word in CHINESE if word not in said] == []
    assert [label for label in ENGLISH_LABELS if label in said] == []
    assert errors == []
    context.close()


def test_a_browser_that_asks_for_english_reads_english(browser, console_url):
    context, page, errors = open_console(browser, console_url, "en-US")
    said = text_of(page)
    assert [word for word in ENGLISH if word not in said] == []
    assert not re.search(r"[\u4e00-\u9fff]", page.locator("nav.tabs").inner_text())
    assert "锁的过期时间短于业务执行时间" not in said
    assert errors == []
    context.close()


def test_the_switch_on_the_page_changes_the_language_and_keeps_it(browser, console_url):
    context, page, errors = open_console(browser, console_url, "en-US")
    page.click("header .languages a[hreflang='zh-CN']")
    page.wait_for_selector("#lab-list li[data-lab='C11']")
    said = text_of(page)
    assert "实时秒杀" in said and "锁的过期时间短于业务执行时间" in said, said
    page.goto(console_url)  # no ?lang= now: the cookie remembers the choice
    page.wait_for_selector("#lab-list li[data-lab='C11']")
    assert "实时秒杀" in text_of(page)
    page.click("header .languages a[hreflang='en']")
    page.wait_for_selector("#lab-list li[data-lab='C11']")
    assert "Live sale" in text_of(page) and "实时秒杀" not in text_of(page)
    assert errors == []
    context.close()


def test_the_control_refuses_in_the_language_asked_and_keeps_an_english_code(console_url):
    asked = {"Authorization": "Bearer language-test"}
    chinese = requests.post(f"{CONTROL[0]}/control/labs/C99/run", timeout=10,
                            headers={**asked, "Accept-Language": "zh-CN"})
    assert chinese.status_code == 404
    assert chinese.json() == {"error": "no lab named 'C99'", "message": "没有名为 'C99' 的实验"}
    english = requests.post(f"{CONTROL[0]}/control/labs/C99/run", headers=asked, timeout=10)
    assert english.json() == {"error": "no lab named 'C99'", "message": "no lab named 'C99'"}
    room = requests.post(f"{CONTROL[0]}/control/room/results", data=b"{}", timeout=10,
                         headers={"Accept-Language": "zh", "Content-Type": "application/json"})
    assert room.status_code == 401 and room.json()["message"].startswith("这需要房间码")
