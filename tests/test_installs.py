"""What each install brings: the checks' wheel declares every package a lesson imports (a fresh venv
with the wheel runs a lesson), and nothing a lesson does not need."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
from pathlib import Path

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
