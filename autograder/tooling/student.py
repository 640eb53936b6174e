"""The student side of the course: the `byhand` package (student/) and the lessons' first cell.

Students never clone this repository: they get one notebook, and its self-checks import the small
package `byhand` (distribution `transformer-by-hand`: torch, numpy, regex, matplotlib), installed from its
wheel (`make wheel`, served by the site), from a path, or from the git URL below.

Every lesson's setup cell seeds and configures first, then imports its checks through the same
block (`setup_block`): in Colab it installs the package itself; anywhere else, when the package is
missing, it says in one line how to install it and defines a stand-in `checks` whose self-checks
say they are off, so Run All still reaches the last cell. The grader never relies on that cell: it
restores the test cells and judges every question in its own process (see grade.py).

    python -m autograder wheel [--out build/wheel]      build the wheel
    python -m autograder setup-cells [LESSON ...]       rewrite the setup cells' import (new lessons)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUDENT = ROOT / "student"
SOLUTIONS = ROOT / "solutions"

# TODO(maintainer): <org>/<repo> is a placeholder until the repository is public; change it here, then
# `python -m autograder setup-cells && make release` (a test keeps every lesson's cell in sync).
GIT_URL = "git+https://github.com/<org>/<repo>#subdirectory=student"

SETUP_BLOCK = """\
# The self-checks come from the course's package `byhand` (it needs torch, numpy, regex and matplotlib).
BYHAND = "{url}"  # or the .whl from the course site
if "google.colab" in sys.modules and importlib.util.find_spec("byhand") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", BYHAND])  # Colab: install it here
    importlib.invalidate_caches()
try:
    from byhand import {topic} as checks
except ImportError:
    print(f'Self-checks are off. To turn them on: pip install "{{BYHAND}}", then restart the kernel.')

    class checks:  # a stand-in: each self-check says it is off, every other cell still runs
        def check(name, *args, **kwargs):
            print(f'{{name}}: self-checks are off (to turn them on: pip install "{{BYHAND}}")')"""

SETUP_IMPORTS = ("import importlib.util", "import subprocess", "import sys")
SOURCE_LINE = re.compile(r'^BYHAND = "[^"\n]*"', re.M)


def install_source() -> str:
    """Where a handed-out notebook's first cell installs the checks from (in Colab, by itself; the
    line it prints elsewhere): `BYHAND_SOURCE` (`make release|book|handout BYHAND_SOURCE=...`: the
    URL of the wheel the course site serves, a package name on an index, or a git URL), else
    `GIT_URL`. The committed notebooks/ keep `GIT_URL`."""
    return os.environ.get("BYHAND_SOURCE") or GIT_URL


def with_install_source(notebook: str, source: str | None = None) -> str:
    """A notebook (its JSON text) whose setup cell installs the checks from `source` (default
    `install_source()`); unchanged when that is `GIT_URL`."""
    source = source or install_source()
    if source == GIT_URL:
        return notebook
    nb = json.loads(notebook)
    for cell in nb["cells"]:
        if is_setup(cell):
            text = SOURCE_LINE.sub(
                lambda _: f"BYHAND = {json.dumps(source)}", "".join(cell["source"]), count=1
            )
            cell["source"] = text.splitlines(keepends=True)
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


OLD_IMPORT = re.compile(r"^from (?:autograder\.checks|byhand) import (\w+) as checks\n", re.M)


def setup_block(topic: str) -> str:
    return SETUP_BLOCK.format(url=GIT_URL, topic=topic)


def setup_cell(source: str, topic: str) -> str:
    """A lesson's setup cell with the canonical checks block: the lesson's imports (the stdlib ones
    the block needs merged into its first group, sorted as ruff sorts them) and its configuration
    (seeds, print options) first, the block last."""
    start = source.find("# The self-checks come from the course's package")
    body = (source[:start] if start >= 0 else OLD_IMPORT.sub("", source)).strip("\n")
    body = re.sub(r"\n{3,}", "\n\n", body)
    first, _, rest = body.partition("\n\n")
    group = first.split("\n")
    if all(line.startswith(("import ", "from ")) for line in group) and not any(
        "torch" in line for line in group
    ):
        # ruff's isort order within the stdlib group: `import x` lines first, then `from x import y`
        plain = {line for line in group if line.startswith("import ")} | set(SETUP_IMPORTS)
        froms = [line for line in group if line.startswith("from ")]
        stdlib = sorted(plain, key=lambda line: line.split()[1].lower()) + froms
        body = "\n".join(stdlib) + ("\n\n" + rest if rest else "")
    else:
        body = "\n".join(SETUP_IMPORTS) + "\n\n" + body
    block = setup_block(topic)
    at = source.find(block)
    # code the lesson defines after the block (given helpers) stays where it is
    tail = source[at + len(block) :] if at >= 0 else ""
    return body + "\n\n" + block + tail


def is_setup(cell) -> bool:
    return cell.get("cell_type") == "code" and "setup" in (cell.get("metadata", {}).get("tags") or [])


def topic_of(lesson: str) -> str:
    import byhand

    return byhand.LESSONS[lesson]


def rewrite_setup_cells(lessons: list[str] | None = None) -> list[Path]:
    """Put the canonical block into each solution's first setup cell (only that cell changes)."""
    changed = []
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        if lessons and path.stem not in lessons:
            continue
        nb = json.loads(path.read_text(encoding="utf-8"))
        cell = next(c for c in nb["cells"] if is_setup(c))
        old = "".join(cell["source"])
        new = setup_cell(old, topic_of(path.stem))
        if new != old:
            cell["source"] = new.splitlines(keepends=True)
            text = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


# ---------------------------------------------------------------------------------------------
# the wheel


def build_wheel(out: Path) -> Path:
    """Build the student package's wheel into `out` (from a copy, so the checkout stays clean)."""
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="byhand-wheel-") as tmp:
        src = Path(tmp) / "student"
        shutil.copytree(STUDENT, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        # fixed file times inside the wheel: the same checks give the same bytes (the handout zip)
        env = {**os.environ, "SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", "1577836800")}
        proc = subprocess.run(cmd + ["-w", tmp, str(src)], capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"building the byhand wheel failed:\n{proc.stdout}\n{proc.stderr}")
        (wheel,) = Path(tmp).glob("transformer_by_hand-*.whl")
        for stale in out.glob("transformer_by_hand-*.whl"):
            stale.unlink()
        return Path(shutil.copy2(wheel, out / wheel.name))


# ---------------------------------------------------------------------------------------------
# the score cell: every lesson's last code cell (given, not graded: tagged `demo`, the grader skips
# it) prints the points the grader will give each autograded question (byhand._score)

SCORE_ID = "score"
SCORE_CELL = """\
if hasattr(checks, "score"):
    checks.score(
        globals(),
        points={{
{points}
        }},
        written={{
{written}
        }},
    )"""


def score_cell_source(lesson: str) -> str:
    """The score cell of `lesson`: its questions' and written answers' points, from the notebook's
    own test cells (nbgrader metadata), so the cell and the grader count the same points."""
    from autograder import course

    def rows(points: dict) -> str:
        return "\n".join(f'            "{name}": {int(p)},' for name, p in points.items())

    return SCORE_CELL.format(
        points=rows(course.questions(lesson)), written=rows(course.manual_questions(lesson))
    )


def score_output(lesson: str) -> str:
    """What the score cell prints on the lesson's reference answers (its stored output)."""
    import contextlib
    import io

    import byhand

    from autograder import course

    ns = course.answer_namespace(lesson)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        byhand.for_lesson(lesson).score(ns, course.questions(lesson), course.manual_questions(lesson))
    return out.getvalue()


def rewrite_score_cells(lessons: list[str] | None = None) -> list[Path]:
    """Make each solution's last cell its score cell (added, or brought up to date), with its output."""
    changed = []
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        if lessons and path.stem not in lessons:
            continue
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = [c for c in nb["cells"] if c.get("id") != SCORE_ID]
        counts = [c.get("execution_count") or 0 for c in cells if c.get("cell_type") == "code"]
        cell = {
            "cell_type": "code",
            "execution_count": max(counts, default=0) + 1,  # run last, as `make execute` leaves it
            "id": SCORE_ID,
            "metadata": {"tags": ["demo"]},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": score_output(path.stem)}],
            "source": score_cell_source(path.stem),
        }
        cell["outputs"][0]["text"] = cell["outputs"][0]["text"].splitlines(keepends=True)
        cell["source"] = cell["source"].splitlines(keepends=True)
        new = {**nb, "cells": cells + [cell]}
        if new != nb:
            text = json.dumps(new, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed
