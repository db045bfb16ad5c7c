"""A student's name: NFKC-normalised and stripped, one name whatever its case, and refused
(with the reason) when it would not show as itself on the projected board."""

from __future__ import annotations

import pytest

from lockshop.room.names import MAX_CHARS, name_key, normalised_name
from lockshop.front_door import Refused


@pytest.mark.parametrize("given, kept", [
    ("  Ada ", "Ada"),
    ("Ｌｉ", "Li"),            # full-width letters are the letters
    ("ﬁona", "fiona"),         # a ligature is its letters
    ("李雷", "李雷"),
    ("Zoë", "Zoë"),
    ("Zoe\u0308", "Zoë"),      # a combining diaeresis is composed
])
def test_a_name_is_kept_normalised(given, kept):
    assert normalised_name(given) == kept


@pytest.mark.parametrize("given, reason", [
    ("", "type a name"),
    ("   ", "type a name"),
    ("\u3000", "type a name"),  # an ideographic space is a space
    ("x" * (MAX_CHARS + 1), f"at most {MAX_CHARS} characters"),
    ("x" * 1000, f"at most {MAX_CHARS} characters"),
    ("Li\u200b", "invisible character (U+200B)"),
    ("\ufeffLi", "invisible character (U+FEFF)"),
    ("L\u2060i", "invisible character (U+2060)"),
    ("Li\u200d", "invisible character (U+200D)"),
    ("\u202eiL", "direction mark (U+202E)"),
    ("Li\u2066", "direction mark (U+2066)"),
    ("Li\u200f", "direction mark (U+200F)"),
    ("Li\u061c", "direction mark (U+061C)"),
    ("Li\x07", "control character (U+0007)"),
    ("Li\nAda", "control character (U+000A)"),
    ("Li\u00ad", "control character (U+00AD)"),  # a soft hyphen: category Cf
    ("Li\ud800", "control character (U+D800)"),   # a lone surrogate, as JSON allows
])
def test_a_name_that_would_not_show_as_itself_is_refused_saying_why(given, reason):
    with pytest.raises(Refused) as refused:
        normalised_name(given)
    assert refused.value.status == 422
    assert reason in str(refused.value.message)


@pytest.mark.parametrize("given", [None, 3, ["Li"], {"name": "Li"}])
def test_a_name_must_be_text(given):
    with pytest.raises(Refused) as refused:
        normalised_name(given)
    assert refused.value.status == 422


def test_names_that_differ_only_in_case_or_width_are_one_name():
    assert name_key(normalised_name("li")) == name_key(normalised_name("Li"))
    assert name_key(normalised_name("ＬＩ")) == name_key(normalised_name("li"))
    assert name_key(normalised_name("Straße")) == name_key(normalised_name("STRASSE"))
    assert name_key(normalised_name("Ada")) != name_key(normalised_name("Ida"))
