"""Aligned text tables in any script: a CJK character takes two columns of a terminal or a notebook's
monospace output, a Latin one takes one, so a column is padded by display width, not by len()."""

from __future__ import annotations

import unicodedata


def width(text: str) -> int:
    """The columns `text` takes in a monospace font: wide and full-width characters (CJK, full-width
    punctuation) two, combining marks none, everything else one."""
    cols = 0
    for ch in str(text):
        if unicodedata.combining(ch):
            continue
        cols += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return cols


def pad(text: str, cols: int, align: str = "<") -> str:
    """`text` padded with spaces to `cols` display columns (`<` left, `>` right, `^` centred); a
    longer text is returned as it is."""
    text = str(text)
    gap = max(cols - width(text), 0)
    if align == ">":
        return " " * gap + text
    if align == "^":
        return " " * (gap // 2) + text + " " * (gap - gap // 2)
    return text + " " * gap
