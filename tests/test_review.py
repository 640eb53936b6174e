"""`make review-zh`: a lesson and its translation side by side, with the cells whose English changed
since their translation flagged stale (text and code cells), and untranslated ones flagged missing."""

from __future__ import annotations

import html
import re
import shutil

import pytest

from autograder import course
from autograder.tooling import review, translations

LESSON = "01_attention"


@pytest.fixture
def tdir(tmp_path, monkeypatch):
    """A copy of the real translations the test may forge."""
    shutil.copytree(translations.TRANSLATIONS, tmp_path / "translations")
    monkeypatch.setattr(translations, "TRANSLATIONS", tmp_path / "translations")
    return tmp_path / "translations"


def _row(page: str, cell: str) -> str:
    m = re.search(rf'<tr class="(\w+)" id="{re.escape(cell)}">(.*?)</tr>', page, re.S)
    assert m, f"no row for {cell}"
    return m.group(1) + " " + m.group(2)


@pytest.mark.parametrize("lesson", ["09_modern_block", "10_flash_attention"])
def test_each_text_cell_sits_beside_its_translation(lesson):
    page = review.render(lesson, "zh_CN")
    entries = {e.en: e.text for e in translations.load(lesson, "zh_CN")}
    for cell_id, source in translations.translatable_cells(course.read_solution(lesson)):
        row = _row(page, cell_id)
        assert row.startswith("current ")
        assert html.escape(source) in row and html.escape(entries[translations.en_hash(source)]) in row
    assert "0 stale" in page and "0 missing" in page


def test_a_changed_english_cell_is_flagged_stale_with_its_old_translation(tdir):
    entries = translations.load(LESSON, "zh_CN")
    forged = [translations.Entry(e.cell, "0" * 12, e.text) if i == 2 else e for i, e in enumerate(entries)]
    translations.path_for(LESSON, "zh_CN").write_text(translations.dump(forged[:-1]), encoding="utf-8")
    code = translations.parse(translations.code_path(LESSON, "zh_CN").read_text(encoding="utf-8"))
    code[0] = translations.Entry(code[0].cell, "f" * 12, code[0].text)
    translations.code_path(LESSON, "zh_CN").write_text(translations.dump(code), encoding="utf-8")

    states = {r.cell: r.state for r in review.rows(LESSON, "zh_CN")}
    assert states[entries[2].cell] == review.STALE and states[code[0].cell] == review.STALE
    assert states[entries[-1].cell] == review.MISSING
    assert sum(s in (review.STALE, review.MISSING) for s in states.values()) == 3
    page = review.render(LESSON, "zh_CN")
    row = _row(page, entries[2].cell)
    assert row.startswith("stale ") and "the English changed" in row and html.escape(entries[2].text) in row
    assert "2 stale" in page and "1 missing" in page
    # the translations report counts the same cells
    line = next(li for li in translations.report("zh_CN").splitlines() if li.startswith(LESSON))
    assert f"1 stale: {entries[2].cell}" in line and "1 missing" in line and "1 code cells stale" in line


def test_the_page_is_written_under_the_lesson_number(tmp_path):
    path = review.write("09_modern_block", "zh_CN", tmp_path)
    assert path == tmp_path / "09.html" and "旋转位置编码" in path.read_text(encoding="utf-8")
