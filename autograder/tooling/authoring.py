"""Write a lesson as plain text, get an nbgrader source notebook.

`solutions/*.ipynb` are the source of truth; this is only a convenient way to create or rewrite one
from a percent-format script (the format jupytext and VS Code use), with nbgrader roles in the
cell headers:

    # %% [markdown]                          a text cell
    # %%                                     a code cell (runs everywhere)
    # %% [answer] id=sdpa_answer             a student answer cell (### BEGIN/END SOLUTION inside)
    # %% [tests] id=causal_mask points=1     a graded test cell: visible checks, then hidden ones
                                               between ### BEGIN HIDDEN TESTS / ### END HIDDEN TESTS
    # %% [question] id=why_scale_question     a locked text cell (the written question)
    # %% [written] id=why_scale points=2     a written answer, graded by hand in formgrader: text with
                                               the model answer and rubric between
                                               ### BEGIN SOLUTION / ### END SOLUTION (the student
                                               version shows YOUR ANSWER HERE)
    # %% [setup]                             a code cell graded answers need (imports, given code)
    # %% [demo]                              a code cell skipped when grading (plots, training)

Usage: python -m autograder.tooling.authoring lesson.py solutions/NN_topic.ipynb
"""

from __future__ import annotations

import re
import sys
from types import MappingProxyType

import nbformat

HEADER = re.compile(r"^# %%(?: \[(\w+)\])?(.*)$")


def _opts(text: str) -> dict:
    return dict(re.findall(r"(\w+)=(\S+)", text))


def _strip_markdown(lines: list) -> str:
    out = []
    for line in lines:
        out.append(line[2:] if line.startswith("# ") else ("" if line.rstrip() == "#" else line))
    return "\n".join(out).strip("\n")


# nbgrader's flags for each kind of graded cell: (grade, locked, solution)
NBGRADER_CELLS = MappingProxyType(
    {
        "answer": (False, False, True),  # the student's code
        "tests": (True, True, False),  # the graded test cell
        "question": (False, True, False),  # a written question's text
        "written": (True, False, True),  # the student's written answer
    }
)


def parse(text: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    cells, kind, opts, body = [], None, {}, []

    def flush():
        if kind is None:
            return
        src = "\n".join(body).strip("\n")
        if kind in ("markdown", "question", "written"):
            cell = nbformat.v4.new_markdown_cell(_strip_markdown(body))
        else:
            cell = nbformat.v4.new_code_cell(src)
        if kind in NBGRADER_CELLS:
            grade, locked, solution = NBGRADER_CELLS[kind]
            meta = {"grade": grade, "grade_id": opts["id"], "locked": locked}
            if grade:
                meta["points"] = int(opts["points"])
            cell.metadata["nbgrader"] = {**meta, "schema_version": 3, "solution": solution, "task": False}
        elif kind in ("demo", "setup"):
            cell.metadata["tags"] = [kind]
        cells.append(cell)

    for line in text.splitlines():
        m = HEADER.match(line)
        if m:
            flush()
            kind, opts, body = (m.group(1) or "code"), _opts(m.group(2)), []
        elif kind is not None:
            body.append(line)
    flush()
    # stable ids keep re-generation byte-identical
    for i, cell in enumerate(cells):
        nb_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        cell["id"] = nb_id or f"cell-{i:03d}"
    nb.cells = cells
    return nb


def main(argv=None):
    argv = argv or sys.argv[1:]
    src, dst = argv
    nb = parse(open(src, encoding="utf-8").read())
    nbformat.write(nb, dst)
    print(f"wrote {dst} ({len(nb.cells)} cells)")


if __name__ == "__main__":
    main()
