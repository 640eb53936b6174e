"""Are the student notebooks what nbgrader makes of the solutions, with nothing leaked?"""

import nbformat
import pytest

from autograder import course
from autograder.tooling import release

LESSONS = course.lessons()


# one lesson in the gate (5 s each): the others' staleness the gate sees by digest, without releasing
# (test_authoring.py::test_the_committed_tree_is_refreshed: refresh.json's release steps)
@pytest.mark.slow
@pytest.mark.parametrize(
    "lesson",
    [pytest.param(lesson, marks=() if i == 0 else pytest.mark.full) for i, lesson in enumerate(LESSONS)],
)
def test_student_notebook_in_sync_with_solution(lesson, tmp_path):
    """Is notebooks/<lesson>.ipynb byte-identical to a fresh `make release`?"""
    assert release.student_version_in_sync(lesson, course=tmp_path / "course"), (
        f"notebooks/{lesson}.ipynb drifted from solutions/{lesson}.ipynb: run `make release`"
    )


@pytest.mark.parametrize("lesson", LESSONS)
def test_student_notebook_leaks_nothing(lesson):
    """Does the student version hold no reference answer, hidden test or output?"""
    text = (course.NOTEBOOKS / f"{lesson}.ipynb").read_text()
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True"):
        assert marker not in text, f"{marker!r} found in notebooks/{lesson}.ipynb"
    nb = nbformat.reads(text, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("lesson", LESSONS)
def test_solution_has_outputs_and_tests(lesson):
    """Is the solution stored executed, with at least one graded test cell?"""
    nb = course.read_solution(lesson)
    assert course.graded_cells(nb), "no graded test cells"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "solution notebook not fully executed: `make execute`"


@pytest.mark.slow
def test_release_is_byte_identical_on_rerun(tmp_path):
    """Does generating the same lesson twice, in two fresh course folders, give the same bytes?"""
    lesson = LESSONS[0]
    first = release.release([lesson], dest=tmp_path / "one", course=tmp_path / "course-one")
    second = release.release([lesson], dest=tmp_path / "two", course=tmp_path / "course-two")
    assert [p.relative_to(tmp_path / "one") for p in first] == [
        p.relative_to(tmp_path / "two") for p in second
    ]
    for a, b in zip(first, second):  # the English notebook and each translation of it
        assert a.read_bytes() == b.read_bytes(), f"{a.name}: the second release differs from the first"
