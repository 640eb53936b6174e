"""The one class graded per test session, shared by every end-to-end test (`shared_class`).

Grading notebooks in sandboxed kernels is most of what the suite costs, so the end-to-end files do
not each grade a class of their own: each contributes its students to this one, graded once by the
real pipeline (`grade_class`, two workers, in this process), and reads its rows from the result.

- pass 1, the default limits: the example class (`examples/class`), the correct alternatives of the
  catalogue that print, warn or write to stderr (tests/test_grading.py), a hostile student and one
  with no gradable notebook (tests/test_formgrader.py), and Chinese notebooks (tests/test_zh_class.py);
- pass 2, into the same output folder, with the small limits the attacks need: the catalogue of
  attacks and broken files (tests/test_adversarial.py), with solved copies of the lesson planted
  around the machine while it runs.

What it grades of the example class depends on `--shared-class` (tests/conftest.py): `whole` (the
default, `make test-full`) grades all of it; `gate` (`make test`) grades every lesson's perfect
answer and every student of the lessons that grade in seconds, and leaves the other students of
the lessons whose checks train or time a model (`EXPENSIVE`: about 60% of the class's grading
time) to `make test-full`. `keeps(student, lesson)` says which; the readers compare only what was
graded, and `tests/test_gate.py` holds the gate's part to every lesson.

The fixture returns a `SharedClass`. No test changes its output folder: one that writes works on a
copy of what it needs (test_class_grading.py's `small_class`). Under pytest-xdist every test that uses the fixture runs in one process (tests/conftest.py puts them
in one `xdist_group`), so the class is graded once per session.
"""

from __future__ import annotations

import csv
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

SHARED_GROUP = "shared-class"  # the xdist_group of every test that reads the shared class

# the lessons whose example notebooks take 10-40 s each to grade (their checks train a model, time
# a trainer or run thousands of dropout copies), measured by grading the shared class on 2 cores
EXPENSIVE = ("06_transformer_block", "07_decoder", "10_flash_attention", "11_tokenizer", "12_training")
PERFECT = "alice"  # the example class's perfect student: graded on every lesson in the gate too


def keeps_in_gate(student: str, lesson: str) -> bool:
    """Does the gate's shared class grade this example notebook (or catalogue answer's)?"""
    return lesson not in EXPENSIVE or student == PERFECT


@dataclass
class SharedClass:
    out: Path  # the grading output folder (grades.csv, summary.csv, feedback/, report/, .state/)
    classes: dict  # contributor -> the submissions folder it filled
    graded: list  # autograder.outcomes.Graded of the whole class, both passes
    seconds: float  # what grading both passes took
    db_url: str  # its nbgrader gradebook
    whole: bool = True  # the whole example class (`--shared-class=whole`), else the gate's part

    def keeps(self, student: str, lesson: str) -> bool:
        """Was this notebook of the example class graded here?"""
        return self.whole or keeps_in_gate(student, lesson)

    def rows(self, students=None) -> list:
        """grades.csv as dicts, only `students` when given."""
        with open(self.out / "grades.csv", newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        return rows if students is None else [r for r in rows if r["student"] in set(students)]

    def by_student(self) -> dict:
        return {g.student: g for g in self.graded}


@pytest.fixture(scope="session")
def shared_class(tmp_path_factory, request) -> SharedClass:
    # the contributors are test modules (tests/ is on sys.path): each builds its own students
    import test_adversarial
    import test_formgrader
    import test_grading
    import test_zh_class

    from autograder.classroom import grade_class
    from autograder.record.report import write_report

    _graded_once_per_run(tmp_path_factory)
    root = tmp_path_factory.mktemp("shared-class")
    main, attacks = root / "class", root / "attacks"
    whole = request.config.getoption("shared_class") == "whole"
    test_grading.add_students(main, keep=None if whole else keeps_in_gate)
    test_formgrader.add_students(main)
    test_zh_class.add_students(main)
    limits = test_adversarial.add_students(attacks)
    out = root / "out"
    planted = test_adversarial.plant_solved_copies()
    t0 = time.monotonic()
    try:
        grade_class(main, out, workers=2, quiet=True)
        result = grade_class(attacks, out, workers=2, limits=limits, quiet=True)
    finally:
        for folder in planted:
            shutil.rmtree(folder, ignore_errors=True)
    seconds = time.monotonic() - t0
    write_report(out, result["graded"])  # what `make grade` writes after grading
    return SharedClass(
        out, {"main": main, "attacks": attacks}, result["graded"], seconds, result["db_url"], whole
    )


def _graded_once_per_run(tmp_path_factory) -> None:
    """Fail when a second pytest-xdist process starts grading the class: its readers were not kept
    in one process (pytest 9.2 made pytest-xdist 3.8 drop `xdist_group`, pytest-xdist#1386), and the
    gate would pay for the class twice."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    run = tmp_path_factory.getbasetemp().parent  # the run's folder, shared by its worker processes
    try:
        fd = os.open(run / "shared-class.graded-by", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        other = (run / "shared-class.graded-by").read_text()
        pytest.fail(
            f"got the shared class graded again in {os.environ['PYTEST_XDIST_WORKER']} (first in {other}), "
            f"expected one process for every test that reads it (the xdist_group {SHARED_GROUP!r})"
        )
    os.write(fd, os.environ["PYTEST_XDIST_WORKER"].encode())
    os.close(fd)
