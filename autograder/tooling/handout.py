"""`make handout`: the student notebooks as one zip for an LMS.

One file per lesson at the top level of the zip, plus a README that says how to install the
checks; fixed timestamps, so the same notebooks give the same bytes on every run.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from autograder.course import BUILD, COURSE_ID, NOTEBOOKS, lessons
from autograder.tooling.student import with_install_source

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


def handout(dest: Path | None = None, selected: list[str] | None = None) -> Path:
    """Write the zip (default build/handout/<course>-notebooks.zip); its notebooks' first cell
    installs the checks from BYHAND_SOURCE when it is set (student.py)."""
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
