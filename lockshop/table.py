"""Plain-text tables for the terminal: right-aligned numbers, no dependencies.

Columns are measured as a terminal draws them: a Chinese character takes two
cells, so a table whose headers are translated stays aligned.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    headers = [str(h) for h in headers]  # a header may be a lazy translation
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(width(h), *(width(r[i]) for r in cells)) if cells else width(h)
              for i, h in enumerate(headers)]
    numeric = [all(_is_number(row[i]) for row in rows) if rows else False
               for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(_pad(v, w, right=num)
                         for v, w, num in zip(values, widths, numeric, strict=True)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in cells)])


def width(text: str) -> int:
    """How many terminal cells ``text`` takes: two for a wide (East Asian) character."""
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def _pad(text: str, cells: int, right: bool) -> str:
    padding = " " * (cells - width(text))
    return padding + text if right else text + padding


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
