"""Languages: one message catalog for everything a person reads, English in the code.

English is the source language: every string a person reads is written in English
and marked where it is written; its Chinese lives in one catalog,
``shop/locale/zh_CN/LC_MESSAGES/messages.po`` (domain ``messages``), kept by
``./run catalog`` (``lockshop/catalog.py``: extract, update, compile). The shop,
its pages, the console's JavaScript and the tooling (CLI, demo, labs, report) all
read that one catalog through this module: the served app cannot import its
tooling, so the mechanism lives here, where both can.

Marking a string:

- ``_("text")`` or ``gettext``: translate now, into the current language;
  ``_("%(count)s orders", count=n)`` fills ``%(name)s`` placeholders after the
  translation (the only placeholder style: Babel checks it in both languages).
- ``ngettext(singular, plural, n, **variables)``: a count's form.
- ``N_("text")``: only marks; the string stays English until someone calls
  ``_(value)`` on it where it is shown (a stable value that must also work as a key).
- ``lazy_gettext("text", **variables)``: a string that translates itself each time
  it is shown, in whatever language is current then: for module-level constants
  (a lab's title, a scenario's name) and for an error's message raised before
  anyone knows who will read it. ``str()`` says it; a Flask answer's JSON says it in
  the request's language (``shop.i18n.web``); for ``json.dumps``, ``plain(record)``.

The current language is, in this order: one set for a block of code
(``with language("zh_CN"):``), the request's (Flask-Babel's locale, chosen by
``shop.i18n.web``), then the process's (``set_language``: the CLI sets it from
``--lang`` or the environment). Untranslated or English: the string as written.

The catalog is compiled from the ``.po`` at first use when its ``.mo`` is missing
or older (written beside it atomically; kept in memory only if that folder is
read-only), so a fresh clone needs no step by hand.
"""

from __future__ import annotations

import gettext as stdlib_gettext
import logging
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache, partial
from io import BytesIO
from pathlib import Path

from babel.support import LazyProxy

log = logging.getLogger(__name__)

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
DOMAIN = "messages"
ENGLISH = "en"
CHINESE = "zh_CN"
#: The languages there is a catalog for (English needs none: it is the code's).
LANGUAGES = (ENGLISH, CHINESE)
#: How each language calls itself, for a switch on a page or a --lang help text.
NATIVE_NAMES = {ENGLISH: "English", CHINESE: "中文"}
#: Chinese written with traditional characters: the catalog is simplified Chinese.
_TRADITIONAL = {"tw", "hk", "mo", "hant"}


# --- which language ----------------------------------------------------------------

def normalise(tag: str | None) -> str | None:
    """The supported language a tag asks for, or None.

    ``zh``, ``zh-CN``, ``zh_CN``, ``zh-Hans``, ``zh-Hans-CN``, ``zh_CN.UTF-8`` and
    ``zh-SG`` are the Chinese catalog; ``en`` and any ``en-XX`` are English;
    everything else (``fr``, ``zh-TW``, ``C``) is None, which callers take as
    "not this one": the next choice, and English at the end.
    """
    if not tag:
        return None
    cleaned = tag.strip().split(".")[0].split("@")[0].replace("_", "-").lower()
    primary, *rest = cleaned.split("-")
    if primary == "en":
        return ENGLISH
    if primary == "zh" and not _TRADITIONAL & set(rest):
        return CHINESE
    return None


def resolve(tag: str | None) -> str:
    """The supported language for ``tag``: English for anything without a catalog."""
    return normalise(tag) or ENGLISH


def language_from_environment(environ: Mapping[str, str]) -> str:
    """The language a gettext program would use under ``environ``.

    As Python's ``gettext`` reads them: the first of ``LANGUAGE``, ``LC_ALL``,
    ``LC_MESSAGES`` and ``LANG`` that is set and not empty decides; ``LANGUAGE``
    may list several (``fr:zh_CN:en``): the first with a catalog wins. ``C`` or
    ``POSIX`` means untranslated, that is, English.
    """
    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(variable, "")
        if not value:
            continue
        for tag in value.split(":"):
            if tag.split(".")[0] in ("C", "POSIX"):
                return ENGLISH
            if normalise(tag):
                return normalise(tag)
        return ENGLISH
    return ENGLISH


_process_language = ENGLISH
_block_language: ContextVar[str | None] = ContextVar("lockshop_language", default=None)


def set_language(tag: str | None) -> str:
    """Set the process's language (the CLI's); returns the one chosen."""
    global _process_language
    _process_language = resolve(tag)
    return _process_language


@contextmanager
def language(tag: str | None) -> Iterator[str]:
    """Within the block, in this thread or task, speak ``tag``'s language."""
    token = _block_language.set(resolve(tag))
    try:
        yield _block_language.get()
    finally:
        _block_language.reset(token)


def current_language() -> str:
    """The block's language, else the request's, else the process's."""
    return _block_language.get() or _language_of_request() or _process_language


def _language_of_request() -> str | None:
    # Only an app that shop.i18n.web set up has a request language (the launcher's
    # control app, for one, may not); outside a request there is none.
    from flask import current_app, has_request_context
    if not has_request_context() or "babel" not in current_app.extensions:
        return None
    from flask_babel import get_locale
    return normalise(str(get_locale()))


# --- translating ---------------------------------------------------------------------

def gettext(message: str, /, **variables: object) -> str:
    """``message`` in the current language, its ``%(name)s`` filled from ``variables``."""
    text = translations(current_language()).gettext(message)
    return text % variables if variables else text


_ = gettext


def ngettext(singular: str, plural: str, n: int, /, **variables: object) -> str:
    """The form for ``n`` in the current language, filled from ``variables``."""
    text = translations(current_language()).ngettext(singular, plural, n)
    return text % variables if variables else text


def join(items: Iterable[object]) -> str:
    """``items`` as a list in a sentence: "a, b, c" in English."""
    # TRANSLATORS: between the items of a list in a sentence ("3 oversold, 2 lost updates").
    return _(", ").join(str(item) for item in items)


def yes_no(value: object) -> str:
    """A yes or a no, as an observation or a table says it."""
    return _("yes") if value else _("no")


def N_(message: str) -> str:
    """Mark ``message`` for the catalog without translating it: ``_(value)`` where shown."""
    return message


def lazy_gettext(message: str, /, **variables: object) -> LazyProxy:
    """A string that is translated, into the language current then, each time it is used."""
    return LazyProxy(partial(gettext, message, **variables), enable_cache=False)


def lazy_ngettext(singular: str, plural: str, n: int, /, **variables: object) -> LazyProxy:
    return LazyProxy(partial(ngettext, singular, plural, n, **variables), enable_cache=False)


def is_lazy(value: object) -> bool:
    return isinstance(value, LazyProxy)


def plain(value: object) -> object:
    """``value`` with every lazy string in it (in dicts, lists, tuples) said now, in the
    current language: for ``json.dumps``, which refuses a lazy string."""
    if is_lazy(value):
        return str(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


# --- the catalogs ---------------------------------------------------------------------

_compiling = threading.Lock()


@cache
def translations(language_: str) -> stdlib_gettext.NullTranslations:
    """The catalog of a supported language; English is the code's own text."""
    if language_ == ENGLISH or language_ not in LANGUAGES:
        return stdlib_gettext.NullTranslations()
    if not catalog_path(language_).is_file() and not catalog_path(language_, ".mo").is_file():
        log.warning("no catalog for %s in %s: speaking English", language_, LOCALE_DIR)
        return stdlib_gettext.NullTranslations()
    return stdlib_gettext.GNUTranslations(BytesIO(compiled_catalog(language_)))


def catalog_path(language_: str, suffix: str = ".po") -> Path:
    return LOCALE_DIR / language_ / "LC_MESSAGES" / f"{DOMAIN}{suffix}"


def compiled_catalog(language_: str) -> bytes:
    """The ``.mo`` of a language, compiled from its ``.po`` if missing or older."""
    po, mo = catalog_path(language_), catalog_path(language_, ".mo")
    with _compiling:
        if mo.is_file() and (not po.is_file() or mo.stat().st_mtime >= po.stat().st_mtime):
            return mo.read_bytes()
        data = compile_po(po)
        try:
            _write_atomically(mo, data)
        except OSError as error:  # an installed, read-only package: memory will do
            log.info("cannot write %s (%s); the catalog is compiled in memory", mo, error)
        return data


def compile_po(po: Path) -> bytes:
    """Compile a ``.po`` into ``.mo`` bytes, as ``pybabel compile`` does (no fuzzy entries)."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with po.open("rb") as source:
        catalog = read_po(source)
    out = BytesIO()
    write_mo(out, catalog, use_fuzzy=False)
    return out.getvalue()


def _write_atomically(path: Path, data: bytes) -> None:
    # Instances start together and may all compile: each renames a whole file.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        # Readable by all, as the .po is (mkstemp's file is its owner's only): the room's
        # gradings run as an unprivileged user and speak the student's language.
        os.fchmod(handle, 0o644)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def catalog_messages(language_: str) -> dict:
    """A language's translations as plain data, for the JavaScript: ``messages``
    (msgid to text), ``plurals`` (singular msgid to its forms) and ``nplurals``."""
    found = translations(language_)
    messages: dict[str, str] = {}
    plurals: dict[str, list[str]] = {}
    for key, text in getattr(found, "_catalog", {}).items():
        if isinstance(key, tuple):
            msgid, index = key
            forms = plurals.setdefault(msgid, [])
            forms.extend([""] * (index + 1 - len(forms)))
            forms[index] = text
        elif key:  # "" is the catalog's header
            messages[key] = text
    nplurals = 2
    plural_forms = found.info().get("plural-forms", "") if hasattr(found, "info") else ""
    for part in plural_forms.split(";"):
        name, _sep, value = part.partition("=")
        if name.strip() == "nplurals" and value.strip().isdigit():
            nplurals = int(value)
    return {"language": language_, "nplurals": nplurals, "messages": messages,
            "plurals": plurals}
