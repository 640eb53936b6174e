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

What nbgrader's formgrader needs, and gets here (measured on nbgrader 0.9.6: it shows only what
the course root lays out and the gradebook says):
- lessons registered by nbgrader's own generate_assignment preprocessors (locked cells, cleared
  solutions, checksums), so every cell has the checksum nbgrader's autograde and validate compare;
- per submission a timestamp, equal to `submitted/<student>/<lesson>/timestamp.txt` (formgrader
  calls a submission autograded only when the two agree), the student's file in `submitted/` and
  the executed notebook in `autograded/` (without it, opening a submission hits nbgrader 0.9.6's
  404 page, whose template imports a `formgrade_macros.tpl` that nbgrader does not ship: the
  `TemplateNotFound` HTTP 500);
- `auto_score` for every autograded cell and `needs_manual_grade` cleared for them, as nbgrader's
  SaveAutoGrades does (a hand grade is not flagged again by every regrade, only when the answer it
  graded changed: `set_aside`, called by folders.apply_manual_grades); written answers get no auto score (they need grading), unanswered ones 0 and the
  comment "No response." as nbgrader gives them. Autograded answer cells get the grader's message
  as their automatic comment.
- `manual()` reads back what a person entered in formgrader: manual scores, extra credit and
  comments.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import datetime as dt
import functools
import random
import time
import warnings
from pathlib import Path

import nbgrader
from alembic.script import ScriptDirectory
from byhand import i18n
from byhand.i18n import N_, msg
from nbgrader.api import Base, Gradebook, InvalidEntry, MissingEntry
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearOutput,
    ClearSolutions,
    ComputeChecksums,
    LockCells,
    SaveCells,
)
from nbgrader.utils import parse_utc
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, SAWarning

from autograder import course
from autograder.outcomes import Status

RETRIES = 8
_LOCK_KEY = 7_462_622_067  # the PostgreSQL advisory lock that serialises schema and lessons


def default_url(out) -> str:
    return f"sqlite:///{out}/gradebook.db?timeout=60"


def is_server(db_url: str) -> bool:
    """A database server several graders can share (PostgreSQL), as opposed to an SQLite file."""
    return db_url.split(":", 1)[0].split("+", 1)[0] in ("postgresql", "postgres")


@contextlib.contextmanager
def exclusive(db_url: str):
    """Held by one grader at a time across all machines (a PostgreSQL advisory lock); a no-op for
    SQLite, whose writers are serialised by its file lock."""
    if not is_server(db_url):
        yield
        return
    from sqlalchemy.pool import NullPool

    engine = create_engine(db_url, future=True, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _LOCK_KEY})
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _LOCK_KEY})
                conn.commit()
    finally:
        engine.dispose()


# nbgrader's generate_assignment, up to the point where it saves the cells (same order)
_REGISTER = (LockCells, ClearSolutions, ClearOutput, CheckCellMetadata, ComputeChecksums, SaveCells)
NO_RESPONSE = "No response."


def register_lessons(db_url: str, lessons: list) -> None:
    with exclusive(db_url):
        with _gradebook(db_url) as gb:
            for lesson in lessons:
                gb.update_or_create_assignment(lesson)
        for lesson in lessons:
            nb = copy.deepcopy(course.read_solution(lesson))
            resources = {"nbgrader": {"notebook": lesson, "assignment": lesson, "db_url": db_url}}
            try:
                for step in _REGISTER:
                    nb, resources = step().preprocess(nb, resources)
            except RuntimeError:
                pass  # already registered with submissions attached: the cells are there


def timestamp_text(when: dt.datetime) -> str:
    """A submission time as nbgrader writes timestamp.txt (UTC)."""
    return when.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def open_gradebook(db_url: str) -> Gradebook:
    with exclusive(db_url):  # two graders creating the schema at once would collide
        return _gradebook(db_url)


@functools.cache
def _alembic_head() -> str:
    """The schema revision nbgrader stamps a new gradebook with: the head of its own alembic
    scripts, read in this process (nbgrader runs the `alembic heads` command for it, a fresh
    interpreter that imports nbgrader: about 5 s of every new gradebook)."""
    return ScriptDirectory(str(Path(nbgrader.__file__).parent / "alembic")).get_current_head()


def _create_schema(db_url: str) -> None:
    """What nbgrader's Gradebook() does to an empty database: its tables and the alembic version
    row (nbgrader then finds tables and leaves both alone)."""
    engine = create_engine(db_url, future=True)
    try:
        if inspect(engine).get_table_names():
            return
        with engine.begin() as conn:
            Base.metadata.create_all(bind=conn)
            conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            conn.execute(
                text("INSERT INTO alembic_version (version_num) VALUES (:v)"), {"v": _alembic_head()}
            )
    finally:
        engine.dispose()


def _gradebook(db_url: str) -> Gradebook:
    _create_schema(db_url)
    return Gradebook(db_url, course.COURSE_ID)


def record(gb: Gradebook, graded_list: list, when: dict | None = None) -> None:
    """Write the auto scores of graded submissions (idempotent: re-grading overwrites), one
    transaction per submission, retried when another grader sharing the database wins a race.
    `when`: (student, lesson) -> the submission's timestamp text (timestamp.txt)."""
    when = when or {}
    for g in graded_list:
        if not g.lesson:
            continue
        for attempt in range(RETRIES):
            try:
                _record_one(gb, g, when.get((g.student, g.lesson)))
                break
            except (IntegrityError, OperationalError, InvalidEntry, DBAPIError):
                _fresh_session(gb)
                if attempt == RETRIES - 1:
                    raise
                time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))


# nbgrader's update_or_create_submission builds a SubmittedAssignment (and its notebooks) while the
# session autoflushes, and SQLAlchemy warns that the half-built objects are not in the session yet;
# nbgrader adds them right after, so the scores are all there (tests/test_grading.py reads them
# back). Silenced around that one call, for that one message: an instructor sees no library noise.
_NOT_IN_SESSION = r"Object of type <Submitted\w+> not in session"


def _record_one(gb: Gradebook, g, stamp: str | None = None) -> None:
    gb.update_or_create_student(g.student)
    extra = {"timestamp": parse_utc(stamp)} if stamp else {}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_NOT_IN_SESSION, category=SAWarning)
        gb.update_or_create_submission(g.lesson, g.student, **extra)
    try:
        notebook = gb.find_submission_notebook(g.lesson, g.lesson, g.student)
    except MissingEntry:
        gb.db.commit()
        return
    rows = {r.question: r for r in g.rows if r.question}
    targets = course.comment_targets(g.lesson)
    for grade in notebook.grades:
        row = rows.get(grade.name)
        if row is not None and row.status == Status.NEEDS_GRADING:
            grade.auto_score = None  # a written answer: a person decides
        else:  # an autograded question, an unanswered written one, or an ungradable notebook: 0
            grade.auto_score = float(row.points) if row is not None else 0.0
        # flagged while nobody has graded a written answer; a hand grade stands until the answer it
        # graded changes (folders.apply_manual_grades then sets it aside and flags that one again)
        grade.needs_manual_grade = grade.auto_score is None and grade.manual_score is None
    for comment in notebook.comments:
        row = rows.get(targets.get(comment.name, ""))
        if row is None or row.status == Status.PASSED:
            comment.auto_comment = None
        elif row.not_done and row.question == comment.name:
            comment.auto_comment = NO_RESPONSE
        elif row.status != Status.NEEDS_GRADING:
            comment.auto_comment = row.message
        else:
            comment.auto_comment = None
    gb.db.commit()


def _fresh_session(gb: Gradebook) -> None:
    """Drop the failed transaction and its session; the next query starts a new one."""
    try:
        gb.db.rollback()
    except Exception:  # noqa: BLE001 - the connection itself may be gone
        pass
    gb.db.remove()


def scores(db_url: str) -> dict:
    """(student, lesson, question) -> score (nbgrader's: the manual score where a person gave one,
    else the auto score, 0 when neither), read back from the gradebook."""
    out = {}
    with open_gradebook(db_url) as gb:
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                for nb in sub.notebooks:
                    for grade in nb.grades:
                        out[(sub.student.id, assignment.name, grade.name)] = float(grade.score or 0)
    return out


def manual(db_url: str) -> dict:
    """What people entered in formgrader: (student, lesson) -> {"scores": {question: (manual score,
    extra credit)}, "comments": {cell: comment}}. Only submissions with something entered."""
    from nbgrader.api import Comment, Grade

    out: dict = {}
    with open_gradebook(db_url) as gb:
        for grade in gb.db.query(Grade).filter((Grade.manual_score != None) | (Grade.extra_credit != None)):  # noqa: E711
            key = (grade.student.id, grade.notebook.assignment.name)
            entry = out.setdefault(key, {"scores": {}, "comments": {}})
            entry["scores"][grade.name] = (grade.manual_score, grade.extra_credit or 0.0)
        for comment in gb.db.query(Comment).filter(Comment.manual_comment != None):  # noqa: E711
            if not (comment.manual_comment or "").strip():
                continue
            key = (comment.student.id, comment.notebook.assignment.name)
            entry = out.setdefault(key, {"scores": {}, "comments": {}})
            entry["comments"][comment.name] = comment.manual_comment.strip()
    return out


def set_aside(db_url: str, student: str, lesson: str, questions: set, cells: set) -> None:
    """Clear the hand grades of `questions` and the comments on `cells` of one submission (their
    answers changed since they were given; the caller keeps them in the history): a written answer
    is flagged for grading again, an autograded question goes back to the grader's points."""
    from nbgrader.api import Comment, Grade

    with open_gradebook(db_url) as gb:
        try:
            notebook = gb.find_submission_notebook(lesson, lesson, student)
        except MissingEntry:
            return
        for grade in gb.db.query(Grade).filter(Grade.notebook_id == notebook.id):
            if grade.name in questions:
                grade.manual_score = None
                grade.extra_credit = None
                grade.needs_manual_grade = grade.auto_score is None
        for comment in gb.db.query(Comment).filter(Comment.notebook_id == notebook.id):
            if comment.name in cells:
                comment.manual_comment = None
        gb.db.commit()


HAND_GRADE = N_("graded by hand: {points} / {max_points} points")
HAND_COMMENT = N_("your instructor's comment: {comment}")


def overlay(graded: list, entered: dict) -> list:
    """The graded submissions with what people entered in formgrader applied (`entered` from
    `manual()`): a manual score replaces the grader's points (plus any extra credit), comments are
    added to the message of the question they are about. Returns new Graded objects; the grader's
    own results (saved for resuming) are left as they were."""
    out = []
    for g in graded:
        entry = entered.get((g.student, g.lesson))
        if not entry or not g.lesson:
            out.append(g)
            continue
        lang = g.language  # what people enter is added in the submission's language
        targets = course.comment_targets(g.lesson)
        notes: dict = {}
        for cell, comment in entry["comments"].items():
            notes.setdefault(targets.get(cell, cell), []).append(comment)
        rows = []
        for r in g.rows:
            r = copy.copy(r)
            if r.question in entry["scores"]:
                manual_score, extra = entry["scores"][r.question]
                points = (r.points if manual_score is None else float(manual_score)) + float(extra)
                full = points >= r.max_points
                r.status = (
                    "passed" if full else ("failed" if r.status in ("passed", "needs grading") else r.status)
                )
                waiting = ("", NEEDS_GRADING_MSG, i18n.localize(NEEDS_GRADING_MSG, lang))
                lead = "" if r.status == "passed" or r.message in waiting else r.message + "\n"
                hand = msg(HAND_GRADE, points=f"{points:g}", max_points=f"{r.max_points:g}")
                r.message = lead + i18n.localize(hand, lang)
                r.points = points
            for comment in notes.get(r.question, []):
                r.message = (r.message + "\n" if r.message else "") + i18n.localize(
                    msg(HAND_COMMENT, comment=comment), lang
                )
            rows.append(r)
        out.append(dataclasses.replace(g, rows=rows))
    return out


NEEDS_GRADING_MSG = N_("a written answer: your instructor grades it by hand")


def set_lateness(db_url: str, rows: list, cfg) -> None:
    """What nbgrader keeps of lateness, from submissions.csv's `rows`: each late notebook's
    `late_submission_penalty` (the points the penalty takes off, so the gradebook's score less its
    penalty, as `nbgrader export` and formgrader's feedback count it, is the points after the
    penalty everywhere else), and each lesson's due date (the course config's, without extensions,
    which nbgrader keeps per assignment only)."""
    from nbgrader.api import Assignment, SubmittedAssignment, SubmittedNotebook

    with open_gradebook(db_url) as gb:
        due = {}
        if cfg is not None:
            for a in gb.db.query(Assignment):
                when = cfg.deadlines.get(a.name, cfg.deadline)
                a.duedate = when.astimezone(dt.timezone.utc).replace(tzinfo=None) if when else None
                due[a.name] = a.duedate
        for r in rows:
            if not r.get("lesson"):
                continue
            try:
                points, after = float(r["points"] or 0), float(r["points_after_penalty"] or 0)
            except ValueError:
                continue
            notebooks = (
                gb.db.query(SubmittedNotebook)
                .join(SubmittedAssignment)
                .join(Assignment)
                .filter(Assignment.name == r["lesson"], SubmittedAssignment.student_id == r["student"])
                .all()
            )
            for nb in notebooks:
                nb.late_submission_penalty = round(points - after, 2) if points > after else None
        gb.db.commit()
