"""No English prose in a Chinese notebook: its text cells (formulas' \\text{} included), the
comments, docstrings, printed text and plot labels of its worked examples and demos, and its setup
cell. Code, identifiers, math symbols, proper names and the English terms the glossary keeps
(token, batch, logits, ...) stay; tests/zh_latin.py is the detector.

The comments of the self-check cells and the docstrings of the answer cells are read too."""

from __future__ import annotations

import re

import nbformat
import pytest
from zh_latin import code_prose, latin_words, markdown_prose

from autograder import course
from autograder.tooling import student

GLOSSARY = course.ROOT / "docs" / "glossary-zh.md"


def glossary_words() -> frozenset:
    """The Latin-script words of the glossary's Chinese column: the terms the Chinese edition keeps
    in English (token, batch, logits, warm-up, top-k ...)."""
    table = GLOSSARY.read_text(encoding="utf-8").split("## 不用的写法", 1)[0]
    chinese = " ".join(
        line.split("|")[2] for line in table.splitlines() if line.startswith("|") and line.count("|") >= 4
    )
    words = re.findall(r"[A-Za-z][A-Za-z_-]*[A-Za-z]", chinese)
    return frozenset(w for w in words if "_" not in w)  # fan_in is code, not the word "in"


def english_in(text: str) -> list:
    allowed = glossary_words()
    return [w for w in latin_words(text) if w not in allowed]


def prose_of_notebook(nb, graded: bool = True) -> list:
    """(cell id, English words) of every cell of a Chinese notebook that has some (`graded`: the
    self-check and answer cells too)."""
    found = []
    for cell in nb.cells:
        meta = course.nbgrader_meta(cell)
        if cell.cell_type == "markdown" and not meta.get("solution"):
            words = english_in(markdown_prose(cell.source))
        elif cell.cell_type == "code" and (graded or not meta or student.is_setup(cell)):
            words = english_in(code_prose(cell.source))
        else:
            continue
        if words:
            found.append((cell.get("id"), sorted(set(words))))
    return found


def _zh(lesson: str):
    return nbformat.read(course.NOTEBOOKS / "zh_CN" / f"{lesson}.ipynb", as_version=4)


@pytest.mark.parametrize("lesson", course.lessons())
def test_a_chinese_notebook_says_no_english(lesson):
    found = prose_of_notebook(_zh(lesson))
    assert not found, (
        f"got English prose in notebooks/zh_CN/{lesson}.ipynb, expected Chinese (translations/zh_CN/"
        f"{lesson}.md for text, translations/zh_CN/code/{lesson}.md for code cells):\n"
        + "\n".join(f"{cid}: {words}" for cid, words in found)
    )


def test_the_detector_reads_formulas_plot_labels_and_text():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(r"缓存大小 $$\text{bytes per token} = 2 N H_{kv} d_{\text{head}}$$"),
        nbformat.v4.new_code_cell('ax.set_xlabel("position in the window")\nax.plot(x, label="RoPE")'),
        nbformat.v4.new_code_cell('ax.set_title("训练长度")\nax.plot(x, label=f"可学习位置，种子 {s}")'),
        nbformat.v4.new_markdown_cell("见 `apply_rope`，claims 测试和 [链接](https://x.org/a-b-c)"),
        nbformat.v4.new_markdown_cell(r"每个 token 的 logits，$m_\text{new}$ 与 $d_{\text{ff}}$"),
        # a gloss right after its Chinese term is the glossary's convention; after anything else it is prose
        nbformat.v4.new_markdown_cell(
            "**解码器**（decoder）读《Attention Is All You Need》，GPT（the decoder）不读"
        ),
    ]
    found = dict(prose_of_notebook(nb))
    ids = [c["id"] for c in nb.cells]
    assert found == {
        ids[0]: ["bytes", "per"],
        ids[1]: ["in", "position", "the", "window"],
        ids[3]: ["claims"],
        ids[5]: ["decoder", "the"],
    }


@pytest.mark.parametrize("lesson", course.lessons())
def test_translated_self_checks_are_not_reported_as_changed(lesson):
    """The grader restores a locked cell a student changed and says so: a Chinese student's untouched
    self-check cells (their comments translated) are not "changed", and a real change still is."""
    import copy

    from autograder.run import restore

    nb = _zh(lesson)
    _, _, notes = restore.restore(nb, course.lesson_text(lesson, "zh_CN"))
    assert not [n for n in notes if "changed" in n], notes
    tests = [c for c in nb.cells if course._is_test(c)]
    assert tests, f"{lesson}: no self-check cell"
    translated = [c for c in tests if re.search(r"[\u4e00-\u9fff]", c.source)]
    # lesson 3's self-checks have no comment to translate: one of them is changed instead
    assert translated or not any("#" in c.source for c in tests), (
        f"{lesson}: no self-check cell with a Chinese comment"
    )
    forged = copy.deepcopy(nb)
    cell = next(c for c in forged.cells if c.get("id") == (translated or tests)[0].get("id"))
    cell.source = cell.source.replace("# 自检", "# 我改的自检", 1) + "\nassert True"
    _, _, notes = restore.restore(forged, course.lesson_text(lesson, "zh_CN"))
    assert any(f"'{course.nbgrader_meta(cell)['grade_id']}' was changed" in n for n in notes), notes


def test_a_chinese_feedback_page_has_no_english_prompt():
    """The feedback page shows code cells with a prompt: "In [3]:" on an English page, "[3]:" (as
    JupyterLab shows it in any language) on a Chinese one."""
    from autograder.record import feedback

    cell = nbformat.v4.new_code_cell("x = 1", id="c1", execution_count=3)
    assert "In&nbsp;[3]:" in feedback._cell_html(cell, "en", frozenset())
    zh = feedback._cell_html(cell, "zh_CN", frozenset())
    assert "[3]:" in zh and "In&nbsp;" not in zh


ASCII_PUNCT_IN_CHINESE = re.compile(r"[\u4e00-\u9fff]\s*[,;:]\s*[\u4e00-\u9fff]")


def ascii_punctuation(text: str) -> list:
    """ASCII commas, semicolons and colons between Chinese words (a tuple in ASCII parentheses,
    `(单复数, 下一个下标)`, is code's notation and stays)."""
    return ASCII_PUNCT_IN_CHINESE.findall(re.sub(r"\([^()\n]*\)", " ", text))


@pytest.mark.parametrize("lesson", course.lessons())
def test_chinese_text_uses_chinese_punctuation(lesson):
    found = []
    for cell in _zh(lesson).cells:
        meta = course.nbgrader_meta(cell)
        if cell.cell_type == "markdown" and not meta.get("solution"):
            found += [(cell.get("id"), p) for p in ascii_punctuation(markdown_prose(cell.source))]
        elif cell.cell_type == "code":
            found += [(cell.get("id"), p) for p in ascii_punctuation(code_prose(cell.source))]
    assert not found, f"notebooks/zh_CN/{lesson}.ipynb: ASCII punctuation inside Chinese: {found}"


def test_the_punctuation_check_can_fail():
    assert ascii_punctuation("朴素版 12.3 ms, 分块版") == []
    assert ascii_punctuation("12.3 毫秒, 分块版") == ["秒, 分"]
    assert ascii_punctuation("返回 (单复数, 下一个下标)") == []
    assert ascii_punctuation("输入:一个张量") == ["入:一"]
