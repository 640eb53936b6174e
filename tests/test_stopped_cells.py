"""A cell stopped by its time limit is said (issue 52, item 6): the feedback page names the cell, the
limit and what was cut, the affected questions' messages in grades.csv say so, the report lists the
notebook, and the limit comes from the course config."""

from __future__ import annotations

import csv

import nbformat
import pytest

from autograder import course
from autograder.classroom import grade_class

LESSON = "01_attention"


@pytest.mark.e2e
def test_an_endless_cell_is_said_everywhere(tmp_path):
    nb = nbformat.read(course.NOTEBOOKS / f"{LESSON}.ipynb", as_version=4)
    sol = nbformat.read(course.SOLUTIONS / f"{LESSON}.ipynb", as_version=4)
    answers = {
        course.nbgrader_meta(c).get("grade_id"): c.source
        for c in sol.cells
        if course.nbgrader_meta(c).get("solution")
    }
    stopped = None
    for i, cell in enumerate(nb.cells):
        gid = course.nbgrader_meta(cell).get("grade_id")
        if gid in answers and cell.cell_type == "code":
            cell.source = answers[gid]
            if gid == "causal_mask_answer":  # the loop before the function: it is never defined
                cell.source = "while True:\n    pass\n\n" + cell.source
                stopped = i + 1
    (tmp_path / "class" / "loop").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "class" / "loop" / f"{LESSON}.ipynb")
    (tmp_path / "course.toml").write_text("[limits]\ncell_timeout = 3\n", encoding="utf-8")
    out = tmp_path / "out"
    grade_class(tmp_path / "class", out, workers=1, quiet=True, config=tmp_path / "course.toml")

    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {r["question"]: r for r in csv.DictReader(f)}
    said = "a cell ran past the 3 s limit"
    assert said in rows["causal_mask"]["message"], (
        f"got {rows['causal_mask']['message']!r}, expected {said!r}"
    )
    assert rows["scaled_dot_product_attention"]["status"] == "passed"
    assert said not in rows["scaled_dot_product_attention"]["message"], (
        "a question before the stop is not affected"
    )
    page = (out / "feedback" / "loop" / f"{LESSON}.html").read_text(encoding="utf-8")
    expected = f"Cell {stopped} ran past the 3 s limit for a cell and was stopped"
    assert expected in page, f"expected {expected!r} on the feedback page"
    assert "did not run" in page.split(expected)[1][:300], "the page says what was cut"
    report = (out / "report" / "index.html").read_text(encoding="utf-8")
    assert "Stopped cells" in report, "expected a section of stopped notebooks in the report"
    section = report.split("Stopped cells")[1]
    assert "loop" in section and f"<td class='num'>{stopped}</td>" in section, section[:500]


@pytest.mark.e2e
def test_a_function_that_never_returns_costs_one_question_limit(tmp_path):
    """A graded function that never returns when the probe calls it (redefined after its test cell,
    so no top-level cell runs it): on main it cost the cell limit three times (every question's probe
    cell, then it alone, then MultiHeadAttention, which calls it, alone); now each of the two is
    stopped after `question_timeout` seconds, said in grades.csv and on the feedback page, and the
    other questions are graded."""
    nb = nbformat.read(course.NOTEBOOKS / f"{LESSON}.ipynb", as_version=4)
    sol = nbformat.read(course.SOLUTIONS / f"{LESSON}.ipynb", as_version=4)
    answers = {
        course.nbgrader_meta(c).get("grade_id"): c.source
        for c in sol.cells
        if course.nbgrader_meta(c).get("solution")
    }
    for cell in nb.cells:
        gid = course.nbgrader_meta(cell).get("grade_id")
        if gid in answers and cell.cell_type == "code":
            cell.source = answers[gid]
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "def scaled_dot_product_attention(q, k, v, mask=None):  # after its test cell\n"
            "    while True:\n"
            "        pass\n"
        )
    )
    (tmp_path / "class" / "hang").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "class" / "hang" / f"{LESSON}.ipynb")
    cell_limit, question_limit = 30, 2
    (tmp_path / "course.toml").write_text(
        f"[limits]\ncell_timeout = {cell_limit}\nquestion_timeout = {question_limit}\n", encoding="utf-8"
    )
    out = tmp_path / "out"
    result = grade_class(tmp_path / "class", out, workers=1, quiet=True, config=tmp_path / "course.toml")

    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {r["question"]: r for r in csv.DictReader(f)}
    said = f"scaled_dot_product_attention was stopped after {question_limit} s"
    got = rows["scaled_dot_product_attention"]
    assert got["status"] != "passed" and said in got["message"], f"got {got}, expected {said!r}"
    for other in ("causal_mask", "padding_mask", "split_heads", "merge_heads"):
        assert rows[other]["status"] == "passed", f"got {rows[other]}, expected {other} graded and passed"
    page = (out / "feedback" / "hang" / f"{LESSON}.html").read_text(encoding="utf-8")
    assert said in page, f"expected {said!r} on the feedback page"
    (graded,) = result["this_run"]
    # before: at least two probe cells stopped at the cell limit, on top of the notebook's own run
    assert graded.seconds < 2 * cell_limit, (
        f"got {graded.seconds:.1f} s for the notebook, expected under {2 * cell_limit} s"
    )


def test_the_limits_are_make_variables_and_options(monkeypatch):
    """`make grade CELL_TIMEOUT= NOTEBOOK_TIMEOUT= QUESTION_TIMEOUT=` reach `grade_class` as the
    command line's limits (which win over the course config's)."""
    import shutil
    import subprocess

    from autograder import __main__ as cli

    if shutil.which("make"):
        dry = subprocess.run(
            ["make", "-n", "grade", "CELL_TIMEOUT=5", "NOTEBOOK_TIMEOUT=9", "QUESTION_TIMEOUT=7"],
            cwd=course.ROOT,
            capture_output=True,
            text=True,
        ).stdout
        for option in ("--cell-timeout 5", "--notebook-timeout 9", "--question-timeout 7"):
            assert option in dry, f"expected {option!r} in make grade's command, got {dry[-400:]!r}"
    got = {}

    def grade_class_(source, out, limits=None, **kw):
        got.update(
            cell=limits.cell_timeout, notebook=limits.notebook_timeout, question=limits.question_timeout
        )
        raise ValueError("stop here")

    import autograder.classroom

    monkeypatch.setattr(autograder.classroom, "grade_class", grade_class_)
    argv = [
        "grade",
        str(course.ROOT),
        "--cell-timeout",
        "5",
        "--notebook-timeout",
        "9",
        "--question-timeout",
        "7",
    ]
    assert cli.main(argv) == 2
    assert got == {"cell": 5, "notebook": 9, "question": 7}, f"got {got}, expected the three limits given"
