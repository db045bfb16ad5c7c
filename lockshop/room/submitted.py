"""What a student's request names, checked at the room's doors: an exercise and a source.

Both are untrusted. An exercise is one of the registry's ids (422 otherwise, whichever
door it came through: a submission, a kept source, a self-reported result); a source is
text of at most ``MAX_SOURCE_BYTES`` in UTF-8 (400 if it is not text, 413 past the cap).
"""

from __future__ import annotations

from lockshop.exercises import EXERCISES
from lockshop.front_door import Refused
from lockshop.room.store import MAX_SOURCE_BYTES
from shop.i18n import lazy_gettext


def known_exercise(exercise: object) -> str:
    """``exercise`` if it is one of the exercises' ids; ``Refused`` (422) otherwise."""
    if not isinstance(exercise, str) or exercise not in EXERCISES:
        raise Refused(422, lazy_gettext("'exercise' must be one of %(ids)s",
                                        ids=", ".join(EXERCISES)))
    return exercise


def checked_source(source: object) -> str:
    """``source`` if it is text within its cap; ``Refused`` (400, 413) otherwise."""
    if not isinstance(source, str):
        raise Refused(400, lazy_gettext("'source' must be text"))
    try:
        size = len(source.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate ("\ud800"): JSON allows it, text does not
        raise Refused(400, lazy_gettext("'source' must be text")) from None
    if size > MAX_SOURCE_BYTES:
        raise Refused(413, lazy_gettext("a source is at most %(kb)s KB",
                                        kb=MAX_SOURCE_BYTES // 1024))
    return source
