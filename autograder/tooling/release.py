"""`make release`: the student notebooks, English and every translation, from `solutions/`.

nbgrader's `generate_assignment` makes the English student notebook (nbgrader_course.py assembles
the course folder it needs); translations.py then writes each translated copy beside it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from autograder import course as _course
from autograder.tooling import nbgrader_course, student, translations


def release(
    selected: list[str] | None = None, dest: Path = _course.NOTEBOOKS, course: Path = nbgrader_course.COURSE
) -> list[Path]:
    """Regenerate the student notebooks (by default `notebooks/`) from `solutions/` with nbgrader;
    their first cell installs the checks from `BYHAND_SOURCE` when it is set (student.py)."""
    course = nbgrader_course.assemble(course)
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for lesson in selected or _course.lessons():
        out = dest / f"{lesson}.ipynb"
        shutil.copyfile(nbgrader_course.generate(lesson, course), out)
        written.append(out)
        written += _translated(lesson, out, dest)
    if student.install_source() != student.GIT_URL:  # make release BYHAND_SOURCE=...
        for path in written:
            path.write_text(student.with_install_source(path.read_text(encoding="utf-8")), encoding="utf-8")
    return written


_translated = translations.translated_notebooks  # the student notebook in every language


def student_version_in_sync(lesson: str, course: Path = nbgrader_course.COURSE) -> bool:
    """True when notebooks/<lesson>.ipynb is what release() would write now."""
    generated = nbgrader_course.generate(lesson, nbgrader_course.assemble(course))
    current = _course.NOTEBOOKS / f"{lesson}.ipynb"
    if not (current.exists() and current.read_bytes() == generated.read_bytes()):
        return False
    for translated in _translated(lesson, generated, course / "translated"):
        committed = _course.NOTEBOOKS / translated.parent.name / translated.name
        if not (committed.exists() and committed.read_bytes() == translated.read_bytes()):
            return False
    return True
