"""Handing out notebooks: a zip for an LMS, and nbgrader's exchange with the course id set."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from autograder import course
from autograder.tooling.handout import handout
from autograder.tooling.nbgrader_course import assemble, release_to_exchange

NBGRADER = [sys.executable, "-m", "nbgrader"]


def test_handout_zip_holds_every_student_notebook(tmp_path):
    """Does `make handout` zip every student notebook as it is in notebooks/, with a README that
    gives the install line, the same bytes on every run?"""
    first = handout(tmp_path / "a.zip")
    again = handout(tmp_path / "b.zip")
    assert first.read_bytes() == again.read_bytes(), "the handout zip differs between two runs"
    with zipfile.ZipFile(first) as zf:
        names = zf.namelist()
        assert names == ["README.txt"] + [f"{lesson}.ipynb" for lesson in course.lessons()], names
        for lesson in course.lessons():
            assert zf.read(f"{lesson}.ipynb") == (course.NOTEBOOKS / f"{lesson}.ipynb").read_bytes(), lesson
        readme = zf.read("README.txt").decode()
    assert "pip install ./student" in readme and "YOUR ANSWER HERE" in readme


@pytest.mark.slow
def test_exchange_release_and_fetch_with_the_generated_config(tmp_path):
    """Does `nbgrader release_assignment` work with the generated config (course id set), and does a
    student's `nbgrader fetch_assignment` get exactly the student notebook?"""
    root, exchange = tmp_path / "course", tmp_path / "exchange"
    assemble(root, exchange=exchange)
    config = (root / "nbgrader_config.py").read_text()
    assert f"course_id = {course.COURSE_ID!r}" in config and str(exchange) in config
    lesson = course.lessons()[0]
    release_to_exchange([lesson], course=root)
    outbound = exchange / course.COURSE_ID / "outbound" / lesson / f"{lesson}.ipynb"
    assert outbound.read_bytes() == (course.NOTEBOOKS / f"{lesson}.ipynb").read_bytes()
    student = tmp_path / "student"
    student.mkdir()
    listed = subprocess.run(
        [*NBGRADER, "list", f"--Exchange.root={exchange}", f"--course={course.COURSE_ID}"],
        cwd=student,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert lesson in listed.stdout + listed.stderr, listed.stdout + listed.stderr
    fetched = subprocess.run(
        [
            *NBGRADER,
            "fetch_assignment",
            lesson,
            f"--Exchange.root={exchange}",
            f"--course={course.COURSE_ID}",
        ],
        cwd=student,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert fetched.returncode == 0, fetched.stderr[-2000:]
    got = next(student.rglob(f"{lesson}.ipynb"))
    assert got.read_bytes() == (course.NOTEBOOKS / f"{lesson}.ipynb").read_bytes()
