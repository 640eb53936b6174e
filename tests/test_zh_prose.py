"""No English prose in a Chinese notebook: its text cells (formulas' \\text{} included), the
comments, docstrings, printed text and plot labels of its worked examples and demos, and its setup
cell. Code, identifiers, math symbols, proper names and the English terms the glossary keeps
(token, batch, logits, ...) stay; tests/zh_latin.py is the detector.

Not read yet: the comments of the self-check cells and the docstrings of the answer cells. They are
graded cells: the grader puts the English source's version back, so they stay English until the
translation tooling translates graded cells too (docs/glossary-zh.md, "what is left")."""

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


def prose_of_notebook(nb) -> list:
    """(cell id, English words) of every cell of a Chinese notebook that has some."""
    found = []
    for cell in nb.cells:
        meta = course.nbgrader_meta(cell)
        if cell.cell_type == "markdown" and not meta.get("solution"):
            words = english_in(markdown_prose(cell.source))
        elif cell.cell_type == "code" and (not meta or student.is_setup(cell)):
            words = english_in(code_prose(cell.source))
        else:
            continue
        if words:
            found.append((cell.get("id"), sorted(set(words))))
    return found


@pytest.mark.parametrize("lesson", course.lessons())
def test_a_chinese_notebook_says_no_english(lesson):
    nb = nbformat.read(course.NOTEBOOKS / "zh_CN" / f"{lesson}.ipynb", as_version=4)
    found = prose_of_notebook(nb)
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
