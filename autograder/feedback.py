"""Feedback a student can act on, and nothing they should not see.

One HTML page per submission: a table of questions (points, passed or not, the hint, the smallest
failing input, got vs expected), then the graded notebook with hidden tests cut out of the test
cells, tracebacks reduced to their last line, and no grader paths.
"""

from __future__ import annotations

import copy
import html
import re
import tempfile

import nbformat
from nbconvert import HTMLExporter

from .course import ROOT, nbgrader_meta

HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)
ANSI = re.compile(r"\x1b\[[0-9;]*m")
_exporter = None


def _clean(text: str) -> str:
    text = ANSI.sub("", text)
    for path in {str(ROOT), tempfile.gettempdir()}:
        text = text.replace(path, "…")
    return text


def public_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The executed notebook as the student may see it."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if nbgrader_meta(cell).get("grade"):
            cell.source = HIDDEN.sub("# (the grader also runs hidden tests here)\n", cell.source)
        outputs = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                out["traceback"] = [_clean(f"{out.get('ename')}: {out.get('evalue')}")]
                out["evalue"] = _clean(out.get("evalue", ""))
            elif out.get("output_type") == "stream":
                out["text"] = _clean(out.get("text", ""))
                if "@@probe-" in out["text"]:
                    continue
            outputs.append(out)
        cell.outputs = outputs
    return nb


def summary_html(sub, rows, notes) -> str:
    pts = sum(r.points for r in rows)
    mx = sum(r.max_points for r in rows)
    lines = [
        f"<h1>{html.escape(sub.lesson)}: feedback for {html.escape(sub.student)}</h1>",
        f"<p class='total'><b>{pts:g} / {mx:g} points</b></p>",
    ]
    for note in notes:
        lines.append(f"<p class='note'>Note: {html.escape(note)}</p>")
    lines.append(
        "<table class='questions'><tr><th>question</th><th>points</th><th>status</th>"
        "<th>what to look at</th></tr>"
    )
    for r in rows:
        msg = html.escape(r.message or ("all checks pass" if r.status == "passed" else ""))
        lines.append(
            f"<tr class='{r.status}'><td><code>{html.escape(r.question)}</code></td>"
            f"<td>{r.points:g} / {r.max_points:g}</td><td>{r.status}</td>"
            f"<td><pre>{msg}</pre></td></tr>"
        )
    lines.append("</table>")
    return "\n".join(lines)


STYLE = """<style>
.tbb-summary{font-family:system-ui,sans-serif;max-width:1000px;margin:1em auto;padding:0 1em}
.tbb-summary table{border-collapse:collapse;width:100%}
.tbb-summary td,.tbb-summary th{border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left}
.tbb-summary tr.passed td:nth-child(3){color:#1a7f37}.tbb-summary tr.failed td:nth-child(3),
.tbb-summary tr.error td:nth-child(3){color:#cf222e}
.tbb-summary pre{white-space:pre-wrap;margin:0;font-size:12px}
</style>"""


def render(sub, nb, rows, notes, source=None) -> str:
    global _exporter
    if _exporter is None:
        _exporter = HTMLExporter(template_name="lab")
        _exporter.exclude_input_prompt = False
    body, _ = _exporter.from_notebook_node(public_notebook(nb))
    head = STYLE + "<div class='tbb-summary'>" + summary_html(sub, rows, notes) + "</div>"
    return (
        body.replace("<body", "<body", 1).replace(">", ">" + head, 1)
        if "<body" not in body
        else re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + head, body, count=1)
    )
