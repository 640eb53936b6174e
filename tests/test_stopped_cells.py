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
