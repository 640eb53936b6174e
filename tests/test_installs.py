"""What each install brings: the checks' wheel declares every package a lesson imports (a fresh venv
with the wheel runs a lesson), and nothing a lesson does not need."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import json
import re
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]


def wheel_dependencies() -> set:
    meta = tomllib.loads((ROOT / "student" / "pyproject.toml").read_text(encoding="utf-8"))
    return {re.split(r"[<>=! ;\[]", d)[0].lower() for d in meta["project"]["dependencies"]}


def _guarded(node, parents) -> bool:
    """Is `node` inside `try: ... except ImportError` (an optional import the lesson does without)?"""
    for p in parents.get(node, []):
        if isinstance(p, ast.Try):
            for h in p.handlers:
                names = [h.type] if not isinstance(h.type, ast.Tuple) else list(h.type.elts)
                if any(
                    isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names
                ):
                    return True
    return False


@functools.cache  # two tests read it: every notebook parsed once
def lesson_imports() -> dict:
    """{top-level module: [lessons]} every student notebook (both languages) imports unconditionally."""
    found: dict = {}
    for path in sorted((ROOT / "notebooks").rglob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            lines = "".join(cell["source"]).splitlines()
            tree = ast.parse("\n".join(ln for ln in lines if not ln.lstrip().startswith(("%", "!"))))
            parents: dict = {}
            for p in ast.walk(tree):
                for child in ast.iter_child_nodes(p):
                    parents[child] = [p, *parents.get(p, [])]
            for n in ast.walk(tree):
                if isinstance(n, ast.Import):
                    mods = [a.name for a in n.names]
                elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
                    mods = [n.module]
                else:
                    continue
                if _guarded(n, parents):
                    continue
                for m in mods:
                    found.setdefault(m.split(".")[0], set()).add(path.stem)
    return {m: sorted(v) for m, v in found.items() if m not in sys.stdlib_module_names and m != "byhand"}


def test_the_wheel_brings_every_package_a_lesson_imports():
    dists = importlib.metadata.packages_distributions()
    needed = {dists.get(m, [m])[0].lower(): lessons for m, lessons in lesson_imports().items()}
    missing = {d: lessons for d, lessons in needed.items() if d not in wheel_dependencies()}
    assert missing == {}, (
        f"got lessons importing {missing} that the checks' wheel does not bring "
        f"(student/pyproject.toml dependencies {sorted(wheel_dependencies())}), expected none"
    )


def test_the_wheel_brings_nothing_a_lesson_or_the_checks_do_not_import():
    dists = importlib.metadata.packages_distributions()
    used = {dists.get(m, [m])[0].lower() for m in lesson_imports()} | {"torch", "numpy", "regex"}
    extra = wheel_dependencies() - used
    assert extra == set(), f"got the wheel depending on {sorted(extra)}, which no lesson imports"


# ---------------------------------------------------------------------------------------------
# installs by role: requirements/<role>.txt name the packages, requirements.txt pins them (once)

ROLES = ("grade", "site", "browser", "cluster", "dev")
NOT_FOR_GRADING = {
    "sphinx": "sphinx",
    "myst-nb": "myst_nb",
    "myst-parser": "myst_parser",
    "sphinx-book-theme": "sphinx_book_theme",
    "pydata-sphinx-theme": "pydata_sphinx_theme",
    "playwright": "playwright",
    "dask": "dask",
    "distributed": "distributed",
    "psycopg2-binary": "psycopg2",
    "pytest": "pytest",
    "pytest-xdist": "xdist",
    "nbval": "nbval",
    "ruff": "ruff",
    "babel": "babel",
}


def _norm(name: str) -> str:
    return name.lower().replace("_", "-")


def _pinned() -> dict:
    out = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==")
            out[_norm(name)] = version
    return out


def _role(role: str) -> set:
    names = set()
    for line in (ROOT / "requirements" / f"{role}.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            names |= _role(line.split()[1].removesuffix(".txt"))
        elif line:
            assert not re.search(r"[<>=~!]", line), f"got a pin in requirements/{role}.txt: {line!r}"
            names.add(_norm(line))
    return names


def test_every_role_installs_pinned_packages_and_requirements_txt_is_their_union():
    pinned = _pinned()
    roles = {role: _role(role) for role in ROLES}
    for role, names in roles.items():
        unpinned = sorted(names - set(pinned))
        assert unpinned == [], (
            f"got requirements/{role}.txt naming {unpinned}, which requirements.txt does not pin"
        )
    left = sorted(set(pinned) - set().union(*roles.values()))
    assert left == [], f"got {left} pinned in requirements.txt and installed by no role"


def test_the_grading_install_holds_no_site_browser_cluster_or_test_package():
    extra = sorted(_role("grade") & set(NOT_FOR_GRADING))
    assert extra == [], f"got requirements/grade.txt installing {extra}, expected only what grading needs"
    makefile = (ROOT / "Makefile").read_text()
    rule = next(ln for ln in makefile.splitlines() if ln.startswith("grade:"))
    assert "$(STAMP)" not in rule and "$(GRADE_STAMP)" in rule, (
        f"got `{rule}`: make grade installs everything"
    )


BLOCK = r"""
import importlib.abc, importlib.machinery, json, sys
blocked = set(json.loads(sys.argv[1]))
class Absent(importlib.abc.Loader):  # importing it fails as an absent package's import does
    def create_module(self, spec):
        raise ModuleNotFoundError(f"{spec.name} is not installed by requirements/grade.txt", name=spec.name)
    def exec_module(self, module):
        pass
class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            return importlib.machinery.ModuleSpec(name, Absent())
sys.meta_path.insert(0, Blocked())
import autograder.__main__, autograder.classroom, autograder.pool, autograder.record.export
import autograder.record.report, autograder.record.feedback, autograder.judge.grade
from autograder.__main__ import main
try:
    main(["grade", "--help"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
"""


@pytest.mark.slow  # a fresh interpreter imports the whole grader: about 6 s of CPU
def test_grading_imports_nothing_the_grading_install_leaves_out(tmp_path):
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", BLOCK, json.dumps(sorted(NOT_FOR_GRADING.values()))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"got grading importing a package of another role:\n{done.stderr[-3000:]}"


def test_make_grade_echoes_its_command_on_one_line():
    """A fresh clone's `make grade` printed its command followed by five lines of bare backslashes
    (each option left out leaves `\\` behind); the command is one line, whatever options are given."""
    import shutil
    import subprocess

    if shutil.which("make") is None:
        import pytest

        pytest.skip("no make")
    for options in ([], ["WORKERS=2", "LESSONS=01", "CELL_TIMEOUT=60"]):
        done = subprocess.run(
            ["make", "-n", "grade", *options],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        lines = [
            ln for ln in done.stdout.splitlines() if "autograder grade" in ln or ln.strip() in ("\\", "")
        ]
        assert len(lines) == 1 and not lines[0].rstrip().endswith("\\"), (
            f"got make grade {' '.join(options)} echoing {lines}, expected its command on one line"
        )
