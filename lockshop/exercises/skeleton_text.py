"""An exercise's skeleton in the reader's language.

Each skeleton ``x.py`` is English; its Chinese twin ``x.zh.py`` (named as the handbook
names its pages, ``x.md`` and ``x.zh.md``) says its docstrings, comments and TODO texts in
Chinese and has exactly the same code: tests/test_chinese_style.py compares the two with
their strings and comments stripped. A language with no twin gets the English.
"""

from __future__ import annotations

from pathlib import Path

from lockshop.invoked import lockshop_command
from shop.i18n import CHINESE, normalise

#: The file suffix of each language's twin (English is the skeleton itself).
SUFFIXES = {CHINESE: ".zh.py"}


def skeleton_path(exercise, language: str | None) -> Path:
    """The file of ``exercise``'s skeleton in ``language`` (a tag: "zh", "zh_CN", "en"),
    or the English one when there is no twin in that language."""
    english = exercise.skeleton
    suffix = SUFFIXES.get(normalise(language) or "")
    if suffix:
        twin = english.with_name(english.stem + suffix)
        if twin.is_file():
            return twin
    return english


def skeleton_text(exercise, language: str | None) -> str:
    """``exercise``'s skeleton (an ``Exercise``, or its number "3") as a student's file in
    ``language``: the room's page and ``lockshop exercise start`` both write this."""
    if isinstance(exercise, str):
        from lockshop.exercises import find
        exercise = find(exercise)
    text = skeleton_path(exercise, language).read_text(encoding="utf-8")
    # Its docstring says how to check it with the project's front door, ./run: said the
    # way this reader runs lockshop, so that it works as printed.
    return text.replace("./run exercise check", f"{lockshop_command()} exercise check")
