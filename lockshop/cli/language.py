"""The CLI's language: ``--lang`` anywhere on the line, else the environment as a
gettext program reads it (LANGUAGE, LC_ALL, LC_MESSAGES, LANG); argparse's own
words ("usage:", "error:", "the following arguments are required") included.

It is chosen before the parser is built: the help texts are translated as they
are given to argparse. ``ArgumentParser`` wraps help by the cells a terminal
draws (a Chinese character takes two) and breaks Chinese between characters,
where argparse's textwrap would cut through a URL and overrun the line.
"""

from __future__ import annotations

import argparse
import re
import textwrap
from collections.abc import Mapping, Sequence

from lockshop.table import width
from shop import i18n
from shop.i18n import _

#: One wide character (it may end or start a line), a run of other non-space
#: characters (kept whole), or spaces.
_UNITS = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]|[^\s\u2e80-\u9fff"
                    r"\uf900-\ufaff\uff00-\uffef\u3000-\u303f]+|\s+")
#: Punctuation that must not begin a line: it stays with what it closes.
_CLOSING = set("，。、；：？！）》」』】,.;:?!)")


def choose_language(argv: Sequence[str],
                    environ: Mapping[str, str]) -> tuple[list[str], str | None]:
    """Set the process's language; return ``argv`` without ``--lang`` and a problem to
    report (a language without a catalog), said in the environment's language."""
    i18n.set_language(i18n.language_from_environment(environ))
    rest, asked = _take_option(list(argv), "--lang")
    _speak_to_argparse()
    if asked is None:
        return rest, None
    if i18n.normalise(asked) is None:
        return rest, _("--lang: no language %(lang)r; choose from %(choices)s",
                       lang=asked, choices=", ".join(i18n.LANGUAGES))
    i18n.set_language(asked)
    return rest, None


def _take_option(argv: list[str], option: str) -> tuple[list[str], str | None]:
    """``argv`` without ``option VALUE`` / ``option=VALUE`` (the last one counts)."""
    rest, value = [], None
    arguments = iter(argv)
    for argument in arguments:
        if argument == "--":
            rest += [argument, *arguments]
            break
        if argument == option:
            value = next(arguments, "")
        elif argument.startswith(option + "="):
            value = argument.partition("=")[2]
        else:
            rest.append(argument)
    return rest, value


def _speak_to_argparse() -> None:
    # argparse looks its messages up through the module-level names it imported
    # from gettext (_ and ngettext), at the moment it says them: pointing those at
    # the catalog makes its usage lines and errors speak the current language.
    # The messages themselves are listed in lockshop/cli/argparse_messages.py.
    argparse._ = i18n.gettext
    argparse.ngettext = i18n.ngettext


def wrap(text: str, cells: int) -> list[str]:
    """``text`` in lines of at most ``cells`` terminal cells (a longer word overruns)."""
    if width(text) == len(text):  # no wide character: textwrap, as argparse does
        return textwrap.wrap(text, cells)
    lines, line = [], ""
    for unit in _UNITS.findall(text):
        if unit.isspace():
            line += " " if line else ""
        elif line and width(line + unit) > cells and unit[0] not in _CLOSING:
            lines.append(line.rstrip())
            line = unit
        else:
            line += unit
    return [*lines, line.rstrip()] if line.strip() else lines


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, measuring and wrapping as a terminal draws."""

    def _split_lines(self, text: str, cells: int) -> list[str]:
        return wrap(self._whitespace_matcher.sub(" ", text).strip(), cells)

    def _fill_text(self, text: str, cells: int, indent: str) -> str:
        text = self._whitespace_matcher.sub(" ", text).strip()
        return "\n".join(indent + line for line in wrap(text, cells - len(indent)))

    def _format_usage(self, usage, actions, groups, prefix) -> str:
        # argparse indents the usage's next lines by len(prefix): a stand-in as wide
        # as the translated prefix keeps them under the program's name.
        prefix = argparse._("usage: ") if prefix is None else prefix
        stand_in = "\0" * width(prefix)
        return super()._format_usage(usage, actions, groups, stand_in).replace(
            stand_in, prefix, 1)


class ArgumentParser(argparse.ArgumentParser):
    """An argparse parser whose help reads well in every language; its subcommands'
    parsers are of this class too."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
