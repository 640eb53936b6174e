"""Aligned tables in both scripts: a column is padded by display width (a CJK character takes two
columns), in the grader's class table and in the Chinese notebooks' printed tables."""

from __future__ import annotations

import ast
import re

import pytest
from byhand.width import pad, width

from autograder import course
from autograder.outcomes import Graded, Row, Status
from autograder.record import export
from autograder.tooling import translations


def test_width_counts_wide_characters_twice():
    assert width("L") == 1 and width("朴素版") == 6 and width("峰值 MiB") == 8 and width("（，）") == 6
    assert pad("张三", 7) == "张三   " and pad("ab", 5, ">") == "   ab" and pad("长长长", 2) == "长长长"


def _columns(line: str) -> list:
    """The display column where each field of a line starts (fields: runs of non-spaces)."""
    return [width(line[: m.start()]) for m in re.finditer(r"\S+", line)]


def test_the_class_table_lines_up_with_chinese_names():
    rows = lambda s, les, p: Row(s, les, "q", p, 2, Status.PASSED, "")  # noqa: E731
    graded = [
        Graded("张小明", "01_attention", [rows("张小明", "01_attention", 2)]),
        Graded("ada", "01_attention", [rows("ada", "01_attention", 1)]),
        Graded("欧阳娜娜", "02_layernorm", [rows("欧阳娜娜", "02_layernorm", 2)]),
    ]
    lines = export.table(graded).splitlines()
    body = [li for li in lines if not li.startswith(("-", "("))]
    starts = {tuple(_columns(li)[1:2]) for li in body}  # the first lesson column starts in one place
    assert len(starts) == 1, "\n".join(lines)
    assert width(lines[1]) == width(lines[0])


def _padded_literals(source: str) -> list:
    """(text, display width once formatted) of each constant padded in an f-string: {'峰值':>16}."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FormattedValue) and isinstance(node.value, ast.Constant):
            spec = "".join(v.value for v in node.format_spec.values) if node.format_spec else ""
            if re.fullmatch(r"[<>^]?\d+", spec):
                out.append((node.value.value, width(format(node.value.value, spec))))
    return out


@pytest.mark.parametrize("lesson", course.lessons())
def test_chinese_table_headers_take_the_width_of_the_english_ones(lesson):
    """Each padded header of a Chinese code cell takes as many columns as the English one, so it
    sits over its numbers (the numbers' own format is the English cell's)."""
    english = {translations.en_hash(c.source): c.source for c in translations.released_code_cells(lesson)}
    bad = []
    for h, zh in translations.code_translations(lesson, "zh_CN").items():
        en_cols = [w for _, w in _padded_literals(english[h])]
        zh_cols = _padded_literals(zh)
        for (text, w), want in zip(zh_cols, en_cols, strict=True):
            if w != want:
                bad.append(f"{text!r} takes {w} columns, the English header {want}")
    assert not bad, f"translations/zh_CN/code/{lesson}.md:\n" + "\n".join(bad)


def test_a_header_padded_by_characters_is_caught():
    assert _padded_literals("print(f\"{'朴素版最大张量':>16}\")") == [("朴素版最大张量", 23)]
    assert _padded_literals("print(f\"{'朴素版最大张量':>9}\")") == [("朴素版最大张量", 16)]
