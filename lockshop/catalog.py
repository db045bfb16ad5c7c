"""``./run catalog``: the message catalog's round trip, so nobody types pybabel's commands.

    ./run catalog          extract every marked string (babel.cfg) into messages.pot,
                           update each language's .po from it, compile the .mo files,
                           and say what is left to translate
    ./run catalog check    change nothing; exit 1 when a .po is behind the code, or has
                           an entry untranslated, fuzzy, or with placeholders that differ

The English lives in the code (``shop.i18n``'s ``_``, ``ngettext``, ``N_``,
``lazy_gettext``; ``_()`` and ``{% trans %}`` in templates; ``i18n._()`` in the
pages' scripts). A translator edits ``shop/locale/<lang>/LC_MESSAGES/messages.po``
and runs this again. The .mo files are not committed: this compiles them, and so
does ``shop.i18n`` at first use when one is missing or older than its .po.

These are pybabel's own commands (``pybabel extract``, ``update``, ``compile``),
run in this process with the project's options; ``tests/test_i18n.py`` extracts
with the same options to find a marked string the catalog lacks.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from babel.messages import Catalog
from babel.messages.frontend import CommandLineInterface
from babel.messages.pofile import read_po

from shop.i18n import DOMAIN, ENGLISH, LANGUAGES, LOCALE_DIR, catalog_path

ROOT = Path(__file__).resolve().parent.parent
BABEL_CFG = ROOT / "babel.cfg"
TEMPLATE = LOCALE_DIR / f"{DOMAIN}.pot"
#: The marking functions (``name:singular,plural`` for the counted ones).
KEYWORDS = ("_", "gettext", "ngettext:1,2", "N_", "lazy_gettext", "lazy_ngettext:1,2")
TRANSLATED = [language for language in LANGUAGES if language != ENGLISH]
#: ``%(name)s``-style and ``{name}``-style placeholders, and a bare ``%s``.
PLACEHOLDER = re.compile(r"%\(\w+\)[-#0 +]?\d*(?:\.\d+)?[diouxXeEfFgGcrs]|%[sdr]|\{\w*\}")


def pybabel(*arguments: str) -> None:
    """Run one pybabel command here; it exits (SystemExit) on a wrong option."""
    CommandLineInterface().run(["pybabel", "-q", *arguments])


def extract(template: Path = TEMPLATE, root: Path = ROOT) -> Catalog:
    """Extract the marked strings under ``root`` into ``template``; return them."""
    keywords = [argument for keyword in KEYWORDS for argument in ("-k", keyword)]
    pybabel("extract", "-F", str(BABEL_CFG), "--no-default-keywords", *keywords,
            "--add-comments=TRANSLATORS:", "--add-location=file", "--sort-by-file",
            "--project=lockshop", "--copyright-holder=lockshop", "-o", str(template),
            # relative, so that the .po says "shop/api/errors.py", not where the clone is
            os.path.relpath(root) if root.is_relative_to(Path.cwd()) else str(root))
    with template.open("rb") as source:
        return read_po(source)


def update(template: Path = TEMPLATE) -> None:
    """Bring each language's .po up to the template (new entries empty, changed ones
    fuzzy with their old translation, gone ones dropped)."""
    for language in TRANSLATED:
        po = catalog_path(language)
        before = po.read_bytes() if po.is_file() else None
        pybabel("update", "-i", str(template), "-d", str(LOCALE_DIR), "-D", DOMAIN,
                "-l", language, "--init-missing", "--ignore-obsolete")
        if before is not None and _entries(before) == _entries(po.read_bytes()):
            po.write_bytes(before)  # only the header's dates changed: no churn in git


def _entries(po: bytes) -> list[tuple]:
    from io import BytesIO
    return [(m.id, m.string, sorted(m.flags), m.locations, m.auto_comments, m.user_comments)
            for m in read_po(BytesIO(po)) if m.id]


def compile_catalogs() -> None:
    pybabel("compile", "-d", str(LOCALE_DIR), "-D", DOMAIN)
    # pybabel writes through a temporary file, readable by its owner alone; the room's
    # gradings run as an unprivileged user and speak the student's language too.
    for mo in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.mo"):
        mo.chmod(0o644)


def read_catalog(language: str) -> Catalog:
    with catalog_path(language).open("rb") as source:
        return read_po(source)


def missing(template: Catalog, catalog: Catalog) -> list[str]:
    """The template's msgids that ``catalog`` lacks: marked in the code, never translated."""
    return sorted(message.id if isinstance(message.id, str) else message.id[0]
                  for message in template if message.id and message.id not in catalog)


def problems(catalog: Catalog, language: str) -> list[str]:
    """Every entry's faults, one line each: untranslated, fuzzy, and placeholders that
    Babel's checkers refuse or that are not exactly the English ones."""
    found = []
    for message in catalog:
        if not message.id:
            continue
        where = f"{language}: {_first(message.id)!r}"
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if not all(strings):
            found.append(f"{where}: not translated")
            continue
        if message.fuzzy:
            found.append(f"{where}: fuzzy (check the translation, then drop the flag)")
        for error in message.check(catalog):
            found.append(f"{where}: {error}")
        english = set(PLACEHOLDER.findall(" ".join(_all(message.id))))
        for string in strings:
            if set(PLACEHOLDER.findall(string)) != english:
                found.append(f"{where}: placeholders {sorted(PLACEHOLDER.findall(string))} "
                             f"are not the English ones {sorted(english)}")
    return found


def _first(msgid: str | tuple) -> str:
    return msgid if isinstance(msgid, str) else msgid[0]


def _all(msgid: str | tuple) -> tuple[str, ...]:
    return (msgid,) if isinstance(msgid, str) else tuple(msgid)


def statistics(catalog: Catalog, language: str) -> str:
    entries = [m for m in catalog if m.id]
    done = [m for m in entries if all(m.string if isinstance(m.string, tuple) else (m.string,))
            and not m.fuzzy]
    return f"{language}: {len(done)} of {len(entries)} messages translated"


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments not in ([], ["check"]):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    checking = arguments == ["check"]
    os.chdir(ROOT)  # the catalog's locations are relative to the project
    template = TEMPLATE
    if checking:
        import tempfile
        template = Path(tempfile.mkdtemp(prefix="lockshop-catalog-")) / f"{DOMAIN}.pot"
    extracted = extract(template)
    if not checking:
        update(template)
        compile_catalogs()
    faults = []
    for language in TRANSLATED:
        catalog = read_catalog(language)
        faults += [f"{language}: {msgid!r}: marked in the code, not in the catalog "
                   "(./run catalog adds it)" for msgid in missing(extracted, catalog)]
        faults += problems(catalog, language)
        print(statistics(catalog, language))
    for fault in faults:
        print(fault)
    if faults:
        print(f"{len(faults)} to do in shop/locale/<language>/LC_MESSAGES/{DOMAIN}.po"
              + ("" if checking else "; then ./run catalog again"))
    return 1 if faults and checking else 0


if __name__ == "__main__":
    sys.exit(main())
