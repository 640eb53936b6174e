"""Rebuild what gets executed from a submission: the student's answers inside the lesson's own
test cells.

A submission may have edited, deleted or duplicated test cells, or forged cell metadata (more
points, a cell marked as a test). Grading keys everything by the *source* notebook: each test or
locked cell is replaced by the source version (hidden tests included), missing ones are put back
after the cell they follow in the source, duplicates are dropped, metadata the source does not
have is stripped. Cells the source tags `demo` are skipped only when their text is unchanged.
"""

from __future__ import annotations

import copy
import re

import nbformat
from byhand.i18n import msg

from autograder.course import TEXT_STUB, nbgrader_meta, tags


def _role(cell) -> str:
    meta = nbgrader_meta(cell)
    if meta.get("solution"):
        return "answer"
    if meta.get("grade") or meta.get("locked"):
        return "locked"
    return "plain"


def restore(student: nbformat.NotebookNode, source: nbformat.NotebookNode):
    """Returns (notebook to execute, indices of cells to skip, notes for the student)."""
    src_by_id = {nbgrader_meta(c)["grade_id"]: c for c in source.cells if nbgrader_meta(c).get("grade_id")}
    demo_text = {c.get("id"): c.source for c in source.cells if "demo" in tags(c)}
    notes, seen, cells = [], set(), []
    for cell in student.cells:
        cell = copy.deepcopy(cell)
        gid = nbgrader_meta(cell).get("grade_id")
        src = src_by_id.get(gid) if gid else None
        if src is None:
            if cell.get("metadata", {}).pop("nbgrader", None):
                notes.append(msg("a cell claimed grading metadata the lesson does not have: ignored"))
            cells.append(cell)
            continue
        if gid in seen:
            if _role(src) != "answer":
                notes.append(msg("a duplicate of the locked cell '{cell}' was removed", cell=gid))
                continue
            cell.metadata.pop("nbgrader", None)  # a copy of an answer cell: plain code
            cells.append(cell)
            continue
        seen.add(gid)
        if _role(src) == "answer":
            cell.metadata["nbgrader"] = copy.deepcopy(src.metadata["nbgrader"])
            cell.cell_type = src.cell_type  # a written answer stays text, code stays code
            if cell.cell_type == "code":
                cell.setdefault("outputs", [])
                cell.setdefault("execution_count", None)
            else:
                cell.pop("outputs", None)
                cell.pop("execution_count", None)
        else:
            if _visible(cell.source) != _visible(src.source) and _role(src) == "locked":
                notes.append(msg("the locked cell '{cell}' was changed: the original was restored", cell=gid))
            cell = copy.deepcopy(src)
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    # put back locked cells that were deleted, after the cell they follow in the source
    for i, src in enumerate(source.cells):
        gid = nbgrader_meta(src).get("grade_id")
        if not gid or gid in seen:
            continue
        seen.add(gid)
        restored = copy.deepcopy(src)
        if restored.cell_type == "code":
            restored.outputs, restored.execution_count = [], None
            if _role(src) == "answer":
                restored.source = "raise NotImplementedError()  # this answer cell was deleted"
        elif _role(src) == "answer":  # a deleted written answer: never the model answer
            restored.source = TEXT_STUB
        notes.append(msg("the cell '{cell}' was missing: it was put back", cell=gid))
        anchor = _anchor(source.cells[:i], cells)
        cells.insert(anchor, restored)
    for cell in cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb = nbformat.v4.new_notebook(metadata=copy.deepcopy(source.metadata))
    nb.cells = cells
    skip = {
        i
        for i, c in enumerate(cells)
        if c.cell_type == "code" and c.get("id") in demo_text and c.source == demo_text[c.get("id")]
    }
    return nb, skip, notes


HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)


def _visible(source: str) -> str:
    """A test cell as the student version shows it (hidden tests removed, as nbgrader does)."""
    return "\n".join(line.rstrip() for line in HIDDEN.sub("", source).strip().splitlines())


def _anchor(before: list, cells: list) -> int:
    """Index after the last cell of `cells` that matches one of the source cells `before`."""
    for src in reversed(before):
        gid = nbgrader_meta(src).get("grade_id")
        for j in range(len(cells) - 1, -1, -1):
            c = cells[j]
            if (gid and nbgrader_meta(c).get("grade_id") == gid) or (
                not gid and c.get("id") == src.get("id")
            ):
                return j + 1
    return 0
