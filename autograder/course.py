"""The course as files: lessons, their cells, and the nbgrader course folder built from them.

`solutions/` is flat (one notebook per lesson); nbgrader wants `source/<assignment>/<nb>.ipynb`.
`assemble()` lays that out under `build/course/` (copies, so nbgrader never writes into the repo),
and `release()` runs nbgrader's `generate_assignment` there and copies the student versions back
to `notebooks/`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "build"
COURSE = BUILD / "course"


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
c.Exchange.root = {exchange!r}
"""


def assemble(course: Path = COURSE) -> Path:
    """Lay `solutions/` out as an nbgrader course under `course/`. Idempotent."""
    (course / "source").mkdir(parents=True, exist_ok=True)
    for lesson in lessons():
        dst = course / "source" / lesson
        dst.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SOLUTIONS / f"{lesson}.ipynb", dst / f"{lesson}.ipynb")
    (course / "exchange").mkdir(exist_ok=True)
    (course / "nbgrader_config.py").write_text(
        NBGRADER_CONFIG.format(root=str(course), exchange=str(course / "exchange"))
    )
    return course


def _generate(lesson: str, course: Path) -> Path:
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


def release(selected: list[str] | None = None, dest: Path = NOTEBOOKS, course: Path = COURSE) -> list[Path]:
    """Regenerate the student notebooks (by default `notebooks/`) from `solutions/` with nbgrader."""
    course = assemble(course)
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for lesson in selected or lessons():
        out = dest / f"{lesson}.ipynb"
        shutil.copyfile(_generate(lesson, course), out)
        written.append(out)
        written += _translated(lesson, out, dest)
    return written


def _translated(lesson: str, student: Path, dest: Path) -> list[Path]:
    """The student notebook in every language that has a translation of this lesson."""
    from . import translations

    written = []
    for lang in translations.LANGUAGES:
        if translations.path_for(lesson, lang).exists():
            nb = translations.translate(nbformat.read(student, as_version=4), lesson, lang)
            out = dest / lang / student.name
            out.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, out)
            written.append(out)
    return written


def student_version_in_sync(lesson: str, course: Path = COURSE) -> bool:
    """True when notebooks/<lesson>.ipynb is what release() would write now."""
    generated = _generate(lesson, assemble(course))
    current = NOTEBOOKS / f"{lesson}.ipynb"
    if not (current.exists() and current.read_bytes() == generated.read_bytes()):
        return False
    for translated in _translated(lesson, generated, course / "translated"):
        committed = NOTEBOOKS / translated.parent.name / translated.name
        if not (committed.exists() and committed.read_bytes() == translated.read_bytes()):
            return False
    return True
