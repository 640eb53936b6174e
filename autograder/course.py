"""The course as files: lessons, their cells, and the nbgrader course folders built from them.

`solutions/` is flat (one notebook per lesson); nbgrader wants `source/<assignment>/<nb>.ipynb`.
`assemble()` lays that out under `build/course/` (copies, so nbgrader never writes into the repo),
and `release()` runs nbgrader's `generate_assignment` there and copies the student versions back
to `notebooks/`. `handout()` zips the student notebooks for an LMS.

`layout()` makes a grading output folder an nbgrader course root as well (what formgrader reads):
`nbgrader_config.py` (course id, gradebook, exchange), `source/` and `release/`; the grader adds
`submitted/` and `autograded/` per submission (see gradebook.py).

Two kinds of graded cells: autograded test cells (code, `grade` without `solution`), decided by
the grader, and written answers (`grade` and `solution`, usually markdown), graded by hand in
formgrader; `questions()` and `manual_questions()` list them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "build"
COURSE = BUILD / "course"
# The nbgrader course id (nbgrader's exchange needs one); NBGRADER_COURSE_ID overrides it.
COURSE_ID = os.environ.get("NBGRADER_COURSE_ID", "transformer-blocks")
TEXT_STUB = "YOUR ANSWER HERE"


def with_examples() -> None:
    """Make `examples` importable: the example class, its expected grades and the answer catalogue
    live in the repository beside the grader (examples/), not in the installed package. For the
    maintainers' commands (`examples`, `mistakes`, `bench`), which run in a checkout."""
    if not (ROOT / "examples" / "__init__.py").exists():
        raise SystemExit(f"no examples/ in {ROOT}: this command needs a checkout of the course repository")
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))


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


# ---------------------------------------------------------------------------------------------
# nbgrader course folder and release

NBGRADER_CONFIG = """\
c = get_config()
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = "sqlite:///" + {root!r} + "/gradebook.db?timeout=60"
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.CourseDirectory.course_id = {course_id!r}
c.Exchange.root = {exchange!r}
"""

# A grading output folder as an nbgrader course root: formgrader (JupyterLab's Nbgrader menu, or
# /formgrader) started in this folder shows every submission the grader recorded.
GRADING_CONFIG = """\
# Written by `make grade`: this output folder is an nbgrader course root, so formgrader started
# here (`make formgrader OUT=...`, or `jupyter lab` in this folder, then Nbgrader > Formgrader)
# shows every graded submission. Manual grades and comments given there are read back by the next
# `make grade` into grades.csv, summary.csv and the feedback pages (without re-running notebooks).
# Edit freely: `make grade` writes this file only when it is missing.
import os

c = get_config()
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = {course_id!r}
c.CourseDirectory.db_url = {db_url}
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.Exchange.root = {exchange!r}
# our own feedback pages are feedback/<student>/<lesson>.html; nbgrader's generate_feedback writes
# feedback/<student>/<lesson>/<lesson>.html next to them
"""


def exchange_root() -> Path:
    """nbgrader's exchange folder: NBGRADER_EXCHANGE, or build/course/exchange (a shared
    /srv/nbgrader/exchange on a JupyterHub)."""
    return Path(os.environ.get("NBGRADER_EXCHANGE", str(COURSE / "exchange")))


def assemble(course: Path = COURSE, exchange: Path | None = None) -> Path:
    """Lay `solutions/` out as an nbgrader course under `course/`. Idempotent."""
    (course / "source").mkdir(parents=True, exist_ok=True)
    for lesson in lessons():
        dst = course / "source" / lesson
        dst.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SOLUTIONS / f"{lesson}.ipynb", dst / f"{lesson}.ipynb")
    exchange = Path(exchange) if exchange else (course / "exchange" if course != COURSE else exchange_root())
    exchange.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(
        NBGRADER_CONFIG.format(root=str(course), exchange=str(exchange), course_id=COURSE_ID)
    )
    return course


def layout(out: Path, lessons_: list, db_url: str) -> None:
    """Make the grading output folder `out` an nbgrader course root for formgrader: its config,
    `source/<lesson>/` (the instructor's notebooks) and `release/<lesson>/` (the student versions)."""
    out = Path(out)
    config = out / "nbgrader_config.py"
    if not config.exists():
        default = f"sqlite:///{out}/gradebook.db?timeout=60"
        url = (
            '"sqlite:///" + c.CourseDirectory.root + "/gradebook.db?timeout=60"'
            if db_url == default
            else repr(db_url)
        )
        config.write_text(
            GRADING_CONFIG.format(course_id=COURSE_ID, db_url=url, exchange=str(exchange_root()))
        )
    for lesson in lessons_:
        for step, src in (
            ("source", SOLUTIONS / f"{lesson}.ipynb"),
            ("release", NOTEBOOKS / f"{lesson}.ipynb"),
        ):
            dst = out / step / lesson / f"{lesson}.ipynb"
            if src.exists() and (not dst.exists() or dst.read_bytes() != src.read_bytes()):
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)


def handout(dest: Path | None = None, selected: list[str] | None = None) -> Path:
    """A zip of the student notebooks for an LMS (one file per lesson, at the top level of the
    zip, plus a README that says how to install the checks), fixed timestamps: the same bytes on
    every run."""
    from autograder.tooling.student import with_install_source  # BYHAND_SOURCE, if set

    dest = Path(dest or BUILD / "handout" / f"{COURSE_ID}-notebooks.zip")
    dest.parent.mkdir(parents=True, exist_ok=True)
    names = selected or lessons()
    readme = HANDOUT_README.format(lessons="\n".join(f"- {n}.ipynb" for n in names))
    tmp = dest.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in [("README.txt", readme.encode())] + [
            (
                f"{n}.ipynb",
                with_install_source((NOTEBOOKS / f"{n}.ipynb").read_text(encoding="utf-8")).encode(),
            )
            for n in names
        ]:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    tmp.replace(dest)
    return dest


HANDOUT_README = """\
Transformer building blocks, by hand: the student notebooks

{lessons}

Open a notebook in Jupyter, JupyterLab or Colab. The self-checks import the course's checks: install
them once in the same environment (in Colab, in the first cell, with a leading !):

    pip install ./student

(from a copy of the course repository; your instructor may give you another install line).
Fill the cells that say YOUR CODE HERE or YOUR ANSWER HERE, run the self-check below each exercise,
and submit the .ipynb file unchanged in name.
"""


def safe_name(name: str) -> str:
    """A student's label as one safe path component (feedback pages, LMS exports)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "_"


def release_to_exchange(selected: list[str] | None = None, course: Path | None = None) -> list[str]:
    """`nbgrader release_assignment` of each lesson from the course folder (generate_assignment
    first, so the gradebook of the course folder knows it): students then `nbgrader fetch_assignment`
    it, or use JupyterLab's Assignments tab."""
    course = assemble() if course is None else Path(course)  # an assembled course folder: its own config
    done = []
    for lesson in selected or lessons():
        for step in (["generate_assignment", lesson, "--force"], ["release_assignment", lesson, "--force"]):
            cmd = [sys.executable, "-m", "nbgrader", *step, "--log-level=WARN"]
            proc = subprocess.run(cmd, cwd=course, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"nbgrader {' '.join(step)} failed:\n{proc.stdout}\n{proc.stderr}")
        done.append(f"released {lesson} (course {COURSE_ID}) from {course}")
    return done


def generate(lesson: str, course: Path) -> Path:
    """Run nbgrader's generate_assignment for one lesson in `course`; the student notebook it made."""
    cmd = [
        sys.executable,
        "-m",
        "nbgrader",
        "generate_assignment",
        lesson,
        "--no-db",
        "--force",
        "--log-level=WARN",
    ]
    proc = subprocess.run(cmd, cwd=course, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader generate_assignment {lesson} failed:\n{proc.stdout}\n{proc.stderr}")
    return course / "release" / lesson / f"{lesson}.ipynb"
