"""A kernel that does not answer when it starts has run none of the notebook: the grader starts
another before it calls the notebook ungradable (a loaded machine once made a right notebook
"ungradable: Kernel didn't respond in 60 seconds")."""

from __future__ import annotations

import csv

import nbformat
import pytest

from autograder import course
from autograder.classroom import grade_class
from autograder.run import probe

LESSON = "01_attention"


@pytest.mark.e2e
@pytest.mark.full  # 19 s; a kernel that never answers is rare, every graded notebook starts one in the gate
def test_a_kernel_that_does_not_answer_is_replaced(tmp_path, monkeypatch):
    sol = nbformat.read(course.SOLUTIONS / f"{LESSON}.ipynb", as_version=4)
    (tmp_path / "class" / "ada").mkdir(parents=True)
    nbformat.write(sol, tmp_path / "class" / "ada" / f"{LESSON}.ipynb")

    real, calls = probe.silently, []

    def first_kernel_silent(client, code, *a, **kw):
        calls.append(code)
        if len(calls) == 1:  # what nbclient raises when a kernel does not answer in time
            raise RuntimeError("Kernel didn't respond in 60 seconds")
        return real(client, code, *a, **kw)

    monkeypatch.setattr(probe, "silently", first_kernel_silent)
    out = tmp_path / "out"
    grade_class(tmp_path / "class", out, workers=1, quiet=True)

    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    got = {(r["question"], r["status"]) for r in rows}
    assert rows and all(r["status"] in ("passed", "needs grading") for r in rows), (
        f"got {sorted(got)}, expected every question graded from a second kernel"
    )
    assert len(calls) >= 2, "expected a second kernel to be started"
