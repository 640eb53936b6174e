"""Build the bundled example class from `notebooks/` and the answers in `answers/a<lesson>.py`.

`examples/class/<student>/<lesson>.ipynb` is committed so `make grade` works straight
away; `expected_grades.csv` is what grading it must give (tests/test_grading.py checks both).
"""

from __future__ import annotations

import copy
import csv
import shutil
from pathlib import Path

import nbformat

from autograder.course import NOTEBOOKS, manual_questions, nbgrader_meta
from examples import answers_for, lessons_with_answers
from examples.written import written_for

HERE = Path(__file__).resolve().parent
CLASS = HERE / "class"
EXPECTED = HERE / "expected_grades.csv"
MALFORMED = "frank"


def folder_name(student: str) -> str:
    """`dave_no_scaling` -> `dave`: one student across lessons, whatever each lesson calls the case."""
    return student.split("_")[0]


def fill(lesson: str, cells: dict) -> nbformat.NotebookNode:
    """The student notebook of `lesson` with the answer cells named in `cells` filled in."""
    nb = nbformat.read(NOTEBOOKS / f"{lesson}.ipynb", as_version=4)
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if gid in cells:
            cell.source = cells[gid].strip("\n")
    unknown = set(cells) - {nbgrader_meta(c).get("grade_id") for c in nb.cells}
    if unknown:
        raise KeyError(f"{lesson}: no answer cells named {sorted(unknown)}")
    return nb


def build(dest: Path = CLASS, expected: Path = EXPECTED) -> list:
    """Write the example class into `dest` and its expected grades into `expected`."""
    if dest.exists():
        shutil.rmtree(dest)
    rows = []
    for lesson in lessons_with_answers():
        mod = answers_for(lesson)
        for student, cells in mod.STUDENTS.items():
            folder = dest / folder_name(student)
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(
                fill(lesson, {**cells, **written_for(lesson, folder.name)}), folder / f"{lesson}.ipynb"
            )
            for question, points in mod.EXPECTED[student].items():
                rows.append([folder_name(student), lesson, question, points, mod.MAX[question]])
            for question, max_points in manual_questions(lesson).items():  # 0 until graded by hand
                rows.append([folder_name(student), lesson, question, 0, int(max_points)])
    # a malformed file: a truncated notebook, as a crashed upload leaves it
    first = lessons_with_answers()[0]
    (dest / MALFORMED).mkdir(parents=True, exist_ok=True)
    text = (NOTEBOOKS / f"{first}.ipynb").read_text()
    (dest / MALFORMED / f"{first}.ipynb").write_text(text[: len(text) // 2])
    rows.append(
        [
            MALFORMED,
            first,
            "",
            0,
            sum(answers_for(first).MAX.values()) + int(sum(manual_questions(first).values())),
        ]
    )
    rows.sort()
    with open(expected, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["student", "lesson", "question", "points", "max_points"])
        w.writerows(rows)
    print(f"wrote {dest} ({len({r[0] for r in rows})} students) and {expected}")
    return rows


def benchmark_class(dest: Path, students: int, lessons: list) -> int:
    """A class of `students` x `lessons` notebooks for `make bench`: perfect, partial, one classic
    mistake, blank, and now and then a broken upload; returns the number of files."""
    n = 0
    for i in range(students):
        name = f"s{i:03d}"
        for lesson in lessons:
            mod = answers_for(lesson)
            perfect = next(v for k, v in mod.STUDENTS.items() if k.startswith("alice"))
            folder = dest / name
            folder.mkdir(parents=True, exist_ok=True)
            kind = i % 4
            if kind == 3 and i % 8 == 7:
                (folder / f"{lesson}.ipynb").write_text('{"cells": [')  # broken upload
                n += 1
                continue
            if kind == 0:
                cells = perfect
            elif kind == 1:
                keys = sorted(perfect)
                cells = {k: perfect[k] for k in keys[: len(keys) // 2]}  # partial
            elif kind == 2:
                mistakes = list(mod.MISTAKES.values())
                cells = {**perfect, **mistakes[i % len(mistakes)]["cells"]}  # a classic mistake
            else:
                cells = {}  # blank
            nbformat.write(fill(lesson, cells), folder / f"{lesson}.ipynb")
            n += 1
    return n
