"""The lessons as the grader reads them: which lessons there are, their cells, their graded questions,
and each lesson as a student of a language received it (`lesson_text`).

Two kinds of graded cells: autograded test cells (code, `grade` without `solution`), decided by
the grader, and written answers (`grade` and `solution`, usually markdown), graded by hand in
formgrader; `questions()` and `manual_questions()` list them. What is built from the lessons lives
with the tooling (tooling/nbgrader_course.py: nbgrader's course folder and exchange;
tooling/release.py: the student notebooks; tooling/handout.py: the zip for an LMS); the grading
output folder as formgrader's course root is written by record/folders.py.
"""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "build"
# The nbgrader course id (nbgrader's exchange needs one); NBGRADER_COURSE_ID overrides it.
COURSE_ID = os.environ.get("NBGRADER_COURSE_ID", "transformer-blocks")
TEXT_STUB = "YOUR ANSWER HERE"


def lessons() -> list[str]:
    """Lesson ids, in order: the stems of `solutions/*.ipynb`."""
    return sorted(p.stem for p in SOLUTIONS.glob("*.ipynb"))


def read_solution(lesson: str) -> nbformat.NotebookNode:
    return nbformat.read(SOLUTIONS / f"{lesson}.ipynb", as_version=4)


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def tags(cell) -> list:
    return list(cell.get("metadata", {}).get("tags", []) or [])


def graded_cells(nb) -> list:
    """Test cells with points, in notebook order."""
    return [
        c
        for c in nb.cells
        if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution") and c.cell_type == "code"
    ]


def questions(lesson: str) -> dict:
    """question (test cell grade_id) -> max points, in notebook order."""
    return {
        nbgrader_meta(c)["grade_id"]: float(nbgrader_meta(c)["points"])
        for c in graded_cells(read_solution(lesson))
    }


def manual_cells(nb) -> list:
    """Written answers: cells with points that are also answer cells (nbgrader's "manually graded
    answer"), graded by hand, never by the grader."""
    return [c for c in nb.cells if nbgrader_meta(c).get("grade") and nbgrader_meta(c).get("solution")]


def manual_questions(lesson: str) -> dict:
    """written answer (grade_id) -> max points, in notebook order."""
    return {
        nbgrader_meta(c)["grade_id"]: float(nbgrader_meta(c)["points"])
        for c in manual_cells(read_solution(lesson))
    }


@functools.cache
def _max_points(lesson: str, stamp: tuple) -> float:
    return sum(questions(lesson).values()) + sum(manual_questions(lesson).values())


def max_points(lesson: str) -> float:
    """Every point a lesson gives: its autograded questions and its written answers together, the
    same for every student whatever they submitted (what an LMS's "points possible" must say)."""
    path = SOLUTIONS / f"{lesson}.ipynb"
    st = path.stat()
    return _max_points(lesson, (st.st_mtime_ns, st.st_size))


def lesson_max(lesson: str, rows_max: float) -> float:
    """`max_points(lesson)` for a lesson of this course; `rows_max` (what the rows say) for a name
    that is none (a refused file's row, a test's made-up lesson)."""
    if lesson and (SOLUTIONS / f"{lesson}.ipynb").is_file():
        return max_points(lesson)
    return rows_max


def comment_targets(lesson: str) -> dict:
    """The question a comment on a cell belongs to: formgrader keeps comments on answer cells, and an
    answer cell's question is itself (a written answer) or the first test cell after it."""
    out, pending = {}, []
    for cell in read_solution(lesson).cells:
        meta = nbgrader_meta(cell)
        if not meta.get("grade_id"):
            continue
        if meta.get("solution") and meta.get("grade"):
            out[meta["grade_id"]] = meta["grade_id"]
        elif meta.get("solution"):
            pending.append(meta["grade_id"])
        elif meta.get("grade"):
            out[meta["grade_id"]] = meta["grade_id"]
            for gid in pending:
                out[gid] = meta["grade_id"]
            pending = []
    return out


def answer_namespace(lesson: str, overrides: dict | None = None) -> dict:
    """Run a lesson's setup cells and answer cells in this process (the reference answers, or the
    code in `overrides` for the answer cells it names) and return the resulting globals."""
    overrides = overrides or {}
    ns: dict = {"__name__": f"lesson_{lesson}"}
    for cell in read_solution(lesson).cells:
        if cell.cell_type != "code":
            continue
        meta = nbgrader_meta(cell)
        if meta.get("solution"):
            src = overrides.get(meta["grade_id"], cell.source)
        elif "setup" in tags(cell):
            src = cell.source
        else:
            continue
        exec(compile(src, f"<{lesson}:{meta.get('grade_id', 'setup')}>", "exec"), ns)
    return ns


@functools.cache
def _lesson_text(lesson: str, lang: str) -> nbformat.NotebookNode:
    source = read_solution(lesson)
    released = NOTEBOOKS / lang / f"{lesson}.ipynb"  # English is notebooks/<lesson>.ipynb: no such file
    if not released.exists():
        return source
    translated = {c.get("id"): c.source for c in nbformat.read(released, as_version=4).cells}
    english = NOTEBOOKS / f"{lesson}.ipynb"
    english = (
        {c.get("id"): c.source for c in nbformat.read(english, as_version=4).cells}
        if english.exists()
        else {}
    )
    for cell in source.cells:
        cid = cell.get("id")
        if _as_released(cell) and cid in translated:
            cell.source = translated[cid]
        elif _is_test(cell) and cid in translated and cid in english:
            cell.source = _with_translated_lines(cell.source, english[cid], translated[cid])
    return source


def _is_test(cell) -> bool:
    meta = nbgrader_meta(cell)
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def _with_translated_lines(source: str, english: str, translated: str) -> str:
    """A test cell's source (hidden tests included) with the lines its translation changed (its
    comments) as the translated release has them; unchanged when the two releases do not pair up
    line by line (the grader then restores the English, as for any changed locked cell)."""
    en_lines, zh_lines = english.split("\n"), translated.split("\n")
    if len(en_lines) != len(zh_lines):
        return source
    lines = dict(zip(en_lines, zh_lines, strict=True))
    return "\n".join(lines.get(line, line) for line in source.split("\n"))


def _as_released(cell) -> bool:
    """A cell a translation changes and whose released text is the lesson's: plain code (translated
    comments and prints) and text, locked text included (a written question); never a test cell
    (its hidden tests are the solution's) nor an answer cell."""
    meta = nbgrader_meta(cell)
    if cell.cell_type == "markdown":
        return not meta.get("solution")
    return cell.cell_type == "code" and not meta


def lesson_text(lesson: str, lang: str) -> nbformat.NotebookNode:
    """The lesson's source as a student of `lang` received it: the solution notebook (its test
    cells, hidden tests and metadata) with the text and plain code cells of the release in `lang`
    (comments and prints translated), and its test cells' translated comments. restore and prune skip a demo or unread cell only when its
    text is the lesson's own, and restore puts back a locked cell a student changed: compared with
    the English, every translated demo of a Chinese notebook ran, and its written questions were
    "changed" and restored in English."""
    return copy.deepcopy(_lesson_text(lesson, lang))
