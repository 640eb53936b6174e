"""Execute solution notebooks in place, deterministically, so their stored outputs are what nbval
re-creates. `python -m autograder execute [LESSON ...]`."""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"


def execute_solution(path: Path, timeout: int = 600) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    env = {"PYTHONHASHSEED": "0", "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    if os.environ.get("PYTHONPATH"):  # a checkout run beside the venv's (a clone): its own packages
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    client.execute(env=env)
    elapsed = time.perf_counter() - start
    # execution counts and timing metadata change on every run: drop them for stable diffs
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    return elapsed


def lessons(names=None) -> list[Path]:
    paths = sorted(SOLUTIONS.glob("*.ipynb"))
    if names:
        paths = [p for p in paths if p.stem in names]
    return paths


def main(names=None) -> None:
    for path in lessons(names):
        secs = execute_solution(path)
        print(f"executed {path.relative_to(ROOT)} in {secs:.1f} s")
