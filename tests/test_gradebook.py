"""The gradebook a grading run creates is the one nbgrader would create."""

from __future__ import annotations

import json

import pytest
from nbgrader.api import Gradebook
from sqlalchemy import create_engine, inspect, text

from autograder import course
from autograder.outcomes import Graded, Row
from autograder.record import folders, gradebook


def _shape(db_url: str) -> tuple:
    engine = create_engine(db_url, future=True)
    try:
        tables = {
            t: sorted(c["name"] for c in inspect(engine).get_columns(t))
            for t in inspect(engine).get_table_names()
        }
        with engine.connect() as conn:
            version = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    finally:
        engine.dispose()
    return tables, version


@pytest.mark.slow  # nbgrader's own way runs the `alembic` command: a fresh interpreter
def test_a_new_gradebook_has_nbgrader_s_tables_and_schema_version(tmp_path):
    """Same tables, columns and alembic revision as nbgrader's Gradebook() on an empty database
    (which runs the venv's `alembic`: tests/conftest.py puts the venv's bin on PATH)."""
    theirs, ours = f"sqlite:///{tmp_path}/theirs.db", f"sqlite:///{tmp_path}/ours.db"
    Gradebook(theirs, course.COURSE_ID).close()
    gradebook.open_gradebook(ours).close()
    got, expected = _shape(ours), _shape(theirs)
    assert got == expected, f"got {got}, expected {expected}"
    assert len(got[1]) == 1 and got[1][0], f"got alembic versions {got[1]}, expected one revision"


def test_opening_a_gradebook_twice_keeps_one_schema_version(tmp_path):
    db_url = f"sqlite:///{tmp_path}/gradebook.db"
    gradebook.open_gradebook(db_url).close()
    with gradebook.open_gradebook(db_url) as gb:
        gb.update_or_create_assignment("01_attention")
    tables, version = _shape(db_url)
    assert version == [gradebook._alembic_head()], f"got {version}, expected one row"
    assert "assignment" in tables


def _submit(out, student, lesson, answers: dict):
    """The student's notebook as `make grade` leaves it in submitted/, with these written answers."""
    import nbformat

    nb = nbformat.read(course.NOTEBOOKS / f"{lesson}.ipynb", as_version=4)
    for cell in nb.cells:
        gid = course.nbgrader_meta(cell).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    path = out / "submitted" / student / lesson / f"{lesson}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def _graded(student, lesson):
    rows = [Row(student, lesson, q, mx, mx, "passed") for q, mx in course.questions(lesson).items()]
    rows += [
        Row(student, lesson, q, 0, mx, "needs grading") for q, mx in course.manual_questions(lesson).items()
    ]
    return Graded(student, lesson, rows)


def _run(out, db_url, graded, fresh=frozenset()):
    """What a `make grade` does after grading: record, then read back the hand grades."""
    with gradebook.open_gradebook(db_url) as gb:
        gradebook.record(gb, graded)
    return {
        (r.student, r.question): r
        for g in folders.apply_manual_grades(out, graded, db_url, set(fresh))
        for r in g.rows
    }


def _flags(db_url, student, lesson):
    with gradebook.open_gradebook(db_url) as gb:
        nb = gb.find_submission_notebook(lesson, lesson, student)
        return {g.name for g in nb.grades if g.needs_manual_grade}


@pytest.mark.slow  # a gradebook written by three grading runs
def test_a_hand_grade_is_set_aside_when_the_answer_it_graded_changes(tmp_path):
    """The trial: two students' written answers graded by hand in formgrader, then one student's
    first answer changed and the class regraded. Does only that grade (and its comment) go aside
    into the history, its row say "needs grading" again, and formgrader flag only that answer; do
    the unchanged answers keep their hand grades, unflagged, through any number of regrades?"""
    out, lesson = tmp_path / "out", "01_attention"
    out.mkdir()
    db_url = f"sqlite:///{out}/gradebook.db"
    gradebook.register_lessons(db_url, [lesson])
    a1 = {"written_sqrt_dk": "The dot products grow like sqrt(d_k).", "written_masked_row": "A NaN row."}
    b1 = {"written_sqrt_dk": "Softmax saturates.", "written_masked_row": "Zeros."}
    _submit(out, "ann", lesson, a1)
    _submit(out, "ben", lesson, b1)
    graded = [_graded("ann", lesson), _graded("ben", lesson)]
    rows = _run(out, db_url, graded, {("ann", lesson), ("ben", lesson)})
    assert rows[("ann", "written_sqrt_dk")].status == "needs grading"
    with gradebook.open_gradebook(db_url) as gb:  # the instructor grades in formgrader
        for student in ("ann", "ben"):
            for q in ("written_sqrt_dk", "written_masked_row"):
                gb.find_grade(q, lesson, lesson, student).manual_score = (
                    2.0 if q == "written_sqrt_dk" else 1.0
                )
            gb.find_comment("written_sqrt_dk", lesson, lesson, student).manual_comment = f"good, {student}"
        gb.db.commit()
    rows = _run(out, db_url, graded)  # a regrade, nothing changed
    assert (
        rows[("ann", "written_sqrt_dk")].points == 2
        and "graded by hand" in rows[("ann", "written_sqrt_dk")].message
    )
    assert _flags(db_url, "ann", lesson) == set() and _flags(db_url, "ben", lesson) == set()

    _submit(out, "ann", lesson, {**a1, "written_sqrt_dk": "I changed my mind: it is the learning rate."})
    rows = _run(out, db_url, graded, {("ann", lesson)})
    ann = rows[("ann", "written_sqrt_dk")]
    assert (ann.points, str(ann.status)) == (0, "needs grading"), ann
    assert "graded by hand" not in ann.message and "good, ann" not in ann.message, ann.message
    assert rows[("ann", "written_masked_row")].points == 1  # unchanged: kept
    assert (
        rows[("ben", "written_sqrt_dk")].points == 2
        and "good, ben" in rows[("ben", "written_sqrt_dk")].message
    )
    assert _flags(db_url, "ann", lesson) == {"written_sqrt_dk"}, "only the changed answer is flagged"
    assert _flags(db_url, "ben", lesson) == set()
    history = json.loads((out / ".state" / "hand" / "history.json").read_text())
    assert [(h["student"], h["question"], h["manual_score"], h["comments"]) for h in history] == [
        ("ann", "written_sqrt_dk", 2.0, {"written_sqrt_dk": "good, ann"})
    ]
    assert (
        'ann,01_attention,written_sqrt_dk,2.0,"good, ann"' in (out / "hand_grades_set_aside.csv").read_text()
    )

    with gradebook.open_gradebook(db_url) as gb:  # graded again, the new answer
        gb.find_grade("written_sqrt_dk", lesson, lesson, "ann").manual_score = 0.5
        gb.db.commit()
    rows = _run(out, db_url, graded)
    assert rows[("ann", "written_sqrt_dk")].points == 0.5
    assert _flags(db_url, "ann", lesson) == set()
