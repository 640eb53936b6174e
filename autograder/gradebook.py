"""Recording grades in nbgrader's gradebook (SQLAlchemy: SQLite by default, any URL it accepts).

Only the grading process writes here (workers send results back to it), so parallel grading never
meets "database is locked". Lessons are registered from the source notebooks with nbgrader's own
SaveCells preprocessor, so the gradebook has the same shape nbgrader's tools expect.
"""
from __future__ import annotations

import copy
import os
import sys

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import SaveCells

from . import course


def default_url(out) -> str:
    return f"sqlite:///{out}/gradebook.db?timeout=60"


def register_lessons(db_url: str, lessons: list) -> None:
    with open_gradebook(db_url) as gb:
        for lesson in lessons:
            gb.update_or_create_assignment(lesson)
    for lesson in lessons:
        nb = copy.deepcopy(course.read_solution(lesson))
        resources = {"nbgrader": {"notebook": lesson, "assignment": lesson, "db_url": db_url}}
        try:
            SaveCells().preprocess(nb, resources)
        except RuntimeError:
            pass   # already registered with submissions attached: the cells are there


def open_gradebook(db_url: str) -> Gradebook:
    """nbgrader runs the `alembic` command it installs: make sure the venv's bin is on PATH."""
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    return Gradebook(db_url)


def record(gb: Gradebook, graded_list: list) -> None:
    """Write the auto scores of graded submissions (idempotent: re-grading overwrites)."""
    if True:
        for g in graded_list:
            if not g.lesson:
                continue
            gb.update_or_create_student(g.student)
            gb.update_or_create_submission(g.lesson, g.student)
            for row in g.rows:
                if not row.question:
                    continue
                try:
                    grade = gb.find_grade(row.question, g.lesson, g.lesson, g.student)
                except MissingEntry:
                    continue
                grade.auto_score = float(row.points)
        gb.db.commit()


def scores(db_url: str) -> dict:
    """(student, lesson, question) -> auto score, read back from the gradebook."""
    out = {}
    with open_gradebook(db_url) as gb:
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                for nb in sub.notebooks:
                    for grade in nb.grades:
                        out[(sub.student.id, assignment.name, grade.name)] = grade.auto_score
    return out
