"""The gradebook a grading run creates is the one nbgrader would create."""

from __future__ import annotations

import pytest
from nbgrader.api import Gradebook
from sqlalchemy import create_engine, inspect, text

from autograder import course
from autograder.record import gradebook


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
