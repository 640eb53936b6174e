"""The executed notebook as a student may see it, and as no browser can be made to run.

Outputs are cut down to plain text and checked PNG/JPEG (no HTML, JavaScript, SVG, Markdown or
LaTeX outputs, no output metadata); cell metadata and attachments are dropped; hidden tests are
cut out of the test cells; ANSI colours and grader paths go. `clean` keeps only harmless tags of
rendered markdown (no script, no event handlers, no style) and only inline images.
"""

from __future__ import annotations

import base64
import binascii
import re
import tempfile
from types import MappingProxyType

import bleach
import nbformat
from byhand.i18n import N_

from autograder.course import ROOT, nbgrader_meta

HIDDEN_LINE = N_("# (the grader also runs hidden tests here)")
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
B64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")
# markdown (lesson text and written answers) after rendering: what may stay
TAGS = frozenset([
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s",
    "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
])  # fmt: skip
ATTRIBUTES = MappingProxyType(
    {"a": ("href", "title"), "img": ("src", "alt", "title"), "td": ("align",), "th": ("align",)}
)
PROTOCOLS = frozenset(["http", "https", "mailto", "data"])


def clean(fragment: str) -> str:
    """Rendered markdown with only harmless tags and attributes left (the rest shown as text)."""
    text = bleach.clean(fragment, tags=TAGS, attributes=dict(ATTRIBUTES), protocols=PROTOCOLS)
    # an image may only be inline data (CSP blocks the rest anyway): no request leaves the page
    return re.sub(r'<img\b[^>]*\bsrc="(?!data:image/(?:png|jpeg|gif);)[^"]*"[^>]*>', "", text)


def scrub(text: str) -> str:
    text = ANSI.sub("", text)
    # the longer first: a checkout under /tmp would otherwise lose only its /tmp
    for path in sorted({str(ROOT), tempfile.gettempdir()}, key=len, reverse=True):
        text = text.replace(path, "…")
    return text


def node(**fields) -> nbformat.NotebookNode:
    """A cell or output built from checked parts (nbformat's constructors would validate each one
    against the schema again: most of a page's cost)."""
    return nbformat.NotebookNode(fields)


def _safe_output(out):
    """An output cut down to what cannot carry markup: plain text, PNG/JPEG as checked base64."""
    kind = out.get("output_type")
    if kind == "stream":
        text = out.get("text", "")
        text = "".join(text) if isinstance(text, list) else str(text)
        if "@@probe-" in text:
            return None
        name = out.get("name") if out.get("name") in ("stdout", "stderr") else "stdout"
        return node(output_type="stream", name=name, text=scrub(text))
    if kind == "error":
        ename, evalue = str(out.get("ename", "")), scrub(str(out.get("evalue", "")))
        return node(output_type="error", ename=ename, evalue=evalue, traceback=[scrub(f"{ename}: {evalue}")])
    if kind in ("execute_result", "display_data"):
        data = out.get("data", {}) or {}
        kept = {}
        for mime in ("image/png", "image/jpeg"):
            value = data.get(mime)
            if isinstance(value, str) and B64.match(value):
                try:
                    base64.b64decode(value, validate=False)
                    kept[mime] = value
                except (binascii.Error, ValueError):
                    pass
        plain = data.get("text/plain")
        if isinstance(plain, list):
            plain = "".join(plain)
        if isinstance(plain, str):
            kept["text/plain"] = scrub(plain)
        if not kept:
            return None
        if kind == "execute_result":
            return node(output_type="execute_result", data=kept, metadata={}, execution_count=None)
        return node(output_type="display_data", data=kept, metadata={})
    return None


def public_notebook(
    nb: nbformat.NotebookNode, title: str = "", hidden_line: str = HIDDEN_LINE
) -> nbformat.NotebookNode:
    """The executed notebook as the student may see it, and as no browser can be made to run."""
    src = nb  # read only: every cell and output below is built anew
    out = nbformat.v4.new_notebook()
    out.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    if title:
        out.metadata["title"] = title
    for i, cell in enumerate(src.cells):
        meta = nbgrader_meta(cell)
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        cid = cell.get("id") if SAFE_ID.match(str(cell.get("id", ""))) else f"cell-{i}"
        if cell.cell_type == "code":
            if meta.get("grade") and not meta.get("solution"):
                source = HIDDEN.sub(hidden_line + "\n", source)
            count = cell.get("execution_count")
            new = node(
                cell_type="code",
                source=source,
                metadata={},
                execution_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
                outputs=[o for o in map(_safe_output, cell.get("outputs", [])) if o is not None],
            )
        elif cell.cell_type == "markdown":
            new = node(cell_type="markdown", source=source, metadata={})
        else:  # raw cells: shown as text
            new = node(
                cell_type="markdown", source="```\n" + source.replace("```", "` ` `") + "\n```", metadata={}
            )
        new["id"] = cid
        out.cells.append(new)
    return out
