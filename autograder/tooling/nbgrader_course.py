"""nbgrader's course folder, built from `solutions/`, and its exchange.

`solutions/` is flat (one notebook per lesson); nbgrader wants `source/<assignment>/<nb>.ipynb`.
`assemble()` lays that out under `build/course/` (copies, so nbgrader never writes into the repo);
`generate()` runs nbgrader's `generate_assignment` there (what `make release` copies back to
`notebooks/`, release.py); `release_to_exchange()` releases lessons into nbgrader's exchange, from
which students fetch them (`python -m autograder exchange`): each lesson's assignment holds the
English notebook and, beside it, every translation (`zh_CN/<lesson>.ipynb`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from autograder.course import BUILD, COURSE_ID, SOLUTIONS, lessons
from autograder.tooling.student import with_install_source

COURSE = BUILD / "course"

NBGRADER_CONFIG = """\
c = get_config()
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = "sqlite:///" + {root!r} + "/gradebook.db?timeout=60"
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.CourseDirectory.course_id = {course_id!r}
c.Exchange.root = {exchange!r}
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


def release_to_exchange(selected: list[str] | None = None, course: Path | None = None) -> list[str]:
    """`nbgrader release_assignment` of each lesson from the course folder (generate_assignment
    first, so the gradebook of the course folder knows it): students then `nbgrader fetch_assignment`
    it, or use JupyterLab's Assignments tab."""
    course = assemble() if course is None else Path(course)  # an assembled course folder: its own config
    # nbgrader creates the gradebook by running `alembic` from PATH: this interpreter's (the venv's)
    # first, or a fresh clone's first `make exchange` fails with FileNotFoundError: 'alembic'
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    done = []
    for lesson in selected or lessons():
        for step in (["generate_assignment", lesson, "--force"], ["release_assignment", lesson, "--force"]):
            cmd = [sys.executable, "-m", "nbgrader", *step, "--log-level=WARN"]
            proc = subprocess.run(cmd, cwd=course, capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise RuntimeError(f"nbgrader {' '.join(step)} failed:\n{proc.stdout}\n{proc.stderr}")
            if step[0] == "generate_assignment":  # the first cell installs from BYHAND_SOURCE, if set
                released = course / "release" / lesson / f"{lesson}.ipynb"
                from autograder.tooling.translations import translated_notebooks

                for path in [released, *translated_notebooks(lesson, released, released.parent)]:
                    path.write_text(with_install_source(path.read_text(encoding="utf-8")), encoding="utf-8")
        langs = sorted(p.parent.name for p in (course / "release" / lesson).glob(f"*/{lesson}.ipynb"))
        done.append(
            f"released {lesson} (course {COURSE_ID}) from {course}"
            + (f", with {', '.join(f'{g}/{lesson}.ipynb' for g in langs)}" if langs else "")
        )
    from autograder.tooling.publish import source_warning

    if warning := source_warning("exchange"):
        done.append(warning + "; or install byhand on the hub for every student")
    return done
