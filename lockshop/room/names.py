"""A student's name in the room: what it may be, and when two names are the same.

A name is shown on the projected board, beside thirty others, so it must read
as what it is. It is NFKC-normalised (a full-width "Ｌｉ" is "Li") and stripped,
and refused when it is empty, longer than ``MAX_CHARS``, or holds a character
that does not show as itself: a bidi control (U+202E turns "Li" round on the
board), a zero-width character ("Li\\u200b" would be a second "Li" that looks
like the first), or any other control or format character (Unicode categories
Cc and Cf, which include both of those families). Two names are the same name
when they are equal after casefolding: "li" is "Li".
"""

from __future__ import annotations

import unicodedata

from lockshop.front_door import Refused
from shop.i18n import lazy_gettext

#: Long enough for any name a room uses; short enough that thirty of the longest, in
#: Chinese, keep the board within its budget (about 213 bytes of JSON a cell, 50 KB as
#: sent: tests/test_room_api.py).
MAX_CHARS = 32
#: Named for the message: every one of them is also in category Cc or Cf.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
                          "\u200e\u200f\u061c")
ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff")
#: Control and format characters, and lone surrogates (no character at all).
HIDDEN_CATEGORIES = ("Cc", "Cf", "Cs")


def normalised_name(given: object) -> str:
    """The name as the room keeps and shows it; ``Refused`` (422) says why it cannot be."""
    if not isinstance(given, str):
        raise Refused(422, lazy_gettext("'name' must be text"))
    if len(given) > 4 * MAX_CHARS:  # before normalising: NFKC can grow a string
        raise Refused(422, lazy_gettext("a name is at most %(count)s characters",
                                        count=MAX_CHARS))
    name = unicodedata.normalize("NFKC", given).strip()
    if not name:
        raise Refused(422, lazy_gettext("type a name: the board shows it"))
    if len(name) > MAX_CHARS:
        raise Refused(422, lazy_gettext("a name is at most %(count)s characters",
                                        count=MAX_CHARS))
    for character in name:
        if character in BIDI_CONTROLS:
            raise Refused(422, lazy_gettext(
                    "a name cannot contain a direction mark (U+%(code)04X): it would show "
                    "the name turned round", code=ord(character)))
        if character in ZERO_WIDTH:
            raise Refused(422, lazy_gettext(
                    "a name cannot contain an invisible character (U+%(code)04X): it would "
                    "look like another student's name", code=ord(character)))
        if unicodedata.category(character) in HIDDEN_CATEGORIES:
            raise Refused(422, lazy_gettext(
                    "a name cannot contain a control character (U+%(code)04X)",
                    code=ord(character)))
    return name


def name_key(name: str) -> str:
    """What makes two normalised names the same name: "li" and "Li" are one."""
    return unicodedata.normalize("NFKC", name.casefold())
