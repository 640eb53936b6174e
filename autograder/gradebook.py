"""Recording grades in nbgrader's gradebook (SQLAlchemy: SQLite by default, any URL it accepts).

Within one grading command only its main process writes here (workers, local or on a Dask cluster,
send results back to it), so parallel grading never meets "database is locked". Lessons are
registered from the source notebooks with nbgrader's own SaveCells preprocessor, so the gradebook has
the same shape nbgrader's tools expect.

Several grading commands (processes or machines) may share one PostgreSQL gradebook
(`--db-url postgresql+psycopg2://user:pass@host/db`): creating the schema and registering lessons is
serialised by a PostgreSQL advisory lock, and each submission is written in its own transaction that
is retried with a fresh session when another grader wins a race on a unique constraint (two graders
creating the same student or submission) or the connection drops. Scores are keyed by
(student, lesson, question) and overwritten, never added, so re-grading counts nothing twice.
"""

from __future__ import annotations

import contextlib
import copy
import os
import random
import sys
import time

from nbgrader.api import Gradebook, InvalidEntry, MissingEntry
from nbgrader.preprocessors import SaveCells
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from . import course

RETRIES = 8
_LOCK_KEY = 7_462_622_067  # the PostgreSQL advisory lock that serialises schema and lessons


def default_url(out) -> str:
    return f"sqlite:///{out}/gradebook.db?timeout=60"


def is_server(db_url: str) -> bool:
    """A database server several graders can share (PostgreSQL), as opposed to an SQLite file."""
    return db_url.split(":", 1)[0].split("+", 1)[0] in ("postgresql", "postgres")


_held: set = set()


@contextlib.contextmanager
def exclusive(db_url: str):
    """Held by one grader at a time across all machines (a PostgreSQL advisory lock; re-entrant
    within a process); a no-op for SQLite, whose writers are serialised by its file lock."""
    if not is_server(db_url) or db_url in _held:
        yield
        return
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    engine = create_engine(db_url, future=True, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _LOCK_KEY})
            conn.commit()
            _held.add(db_url)
            try:
                yield
            finally:
                _held.discard(db_url)
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _LOCK_KEY})
                conn.commit()
    finally:
        engine.dispose()


def register_lessons(db_url: str, lessons: list) -> None:
    with exclusive(db_url):
        with open_gradebook(db_url) as gb:
            for lesson in lessons:
                gb.update_or_create_assignment(lesson)
        for lesson in lessons:
            nb = copy.deepcopy(course.read_solution(lesson))
            resources = {"nbgrader": {"notebook": lesson, "assignment": lesson, "db_url": db_url}}
            try:
                SaveCells().preprocess(nb, resources)
            except RuntimeError:
                pass  # already registered with submissions attached: the cells are there


def open_gradebook(db_url: str) -> Gradebook:
    """nbgrader runs the `alembic` command it installs: make sure the venv's bin is on PATH."""
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    if not is_server(db_url):
        return Gradebook(db_url)
    with exclusive(db_url):  # two graders creating the schema at once would collide
        return Gradebook(db_url)


def record(gb: Gradebook, graded_list: list) -> None:
    """Write the auto scores of graded submissions (idempotent: re-grading overwrites), one
    transaction per submission, retried when another grader sharing the database wins a race."""
    for g in graded_list:
        if not g.lesson:
            continue
        for attempt in range(RETRIES):
            try:
                _record_one(gb, g)
                break
            except (IntegrityError, OperationalError, InvalidEntry, DBAPIError):
                _fresh_session(gb)
                if attempt == RETRIES - 1:
                    raise
                time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))


def _record_one(gb: Gradebook, g) -> None:
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


def _fresh_session(gb: Gradebook) -> None:
    """Drop the failed transaction and its session; the next query starts a new one."""
    try:
        gb.db.rollback()
    except Exception:  # noqa: BLE001 - the connection itself may be gone
        pass
    gb.db.remove()


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
