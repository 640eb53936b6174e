"""Feedback a student can act on, and nothing they should not see, or that a submission could run.

One HTML page per submission, `OUT/feedback/<student>/<lesson>.html`: a table of questions (points,
passed or not, the hint, the smallest failing input, got vs expected, a grade and comment given by
hand in formgrader), then the graded notebook with hidden tests cut out of the test cells,
tracebacks reduced to their last line, and no grader paths.

Everything a submission controls is treated as hostile: outputs are cut down to plain text and
PNG/JPEG images (no HTML, JavaScript, SVG, Markdown or LaTeX outputs, no output metadata), markdown
is rendered and then cleaned with an allow-list of tags (no script, no event handlers, no style),
cell metadata and attachments are dropped, and every page carries a Content-Security-Policy that
lets no inline script run and nothing load from outside (the pages work offline: MathJax 3 is a
local copy in `OUT/feedback/_assets/`, from the same npm package as the site).
"""

from __future__ import annotations

import base64
import binascii
import copy
import fcntl
import functools
import html
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import MappingProxyType

import bleach
import nbformat
from nbconvert import HTMLExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.strings import clean_html as nbconvert_clean_html

from autograder.course import ROOT, TEXT_STUB, nbgrader_meta

HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
B64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")
ASSETS = "_assets"  # OUT/feedback/_assets: MathJax and its configuration, shared by every page
SITE = ROOT / "site"
MATHJAX_ES5 = SITE / "node_modules" / "mathjax" / "es5"
# what a page needs of MathJax 3: the combined component, its fonts, and the "safe" extension
MATHJAX_FILES = ("tex-chtml-full.js", "ui/safe.js", "output/chtml/fonts/woff-v2")
MATHJAX_CONFIG = """\
window.MathJax = {
  tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']], displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']],
        processEscapes: true, packages: {'[-]': ['require']}},
  loader: {load: ['ui/safe']},
  options: {enableMenu: false}
};
"""
CSP = (
    "default-src 'none'; script-src 'self' file:; style-src 'self' file: 'unsafe-inline'; "
    "img-src 'self' file: data:; font-src 'self' file: data:; base-uri 'none'; form-action 'none'"
)

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


def _clean(text: str) -> str:
    text = ANSI.sub("", text)
    # the longer first: a checkout under /tmp would otherwise lose only its /tmp
    for path in sorted({str(ROOT), tempfile.gettempdir()}, key=len, reverse=True):
        text = text.replace(path, "…")
    return text


def _safe_output(out):
    """An output cut down to what cannot carry markup: plain text, PNG/JPEG as checked base64."""
    kind = out.get("output_type")
    if kind == "stream":
        text = out.get("text", "")
        text = "".join(text) if isinstance(text, list) else str(text)
        if "@@probe-" in text:
            return None
        name = out.get("name") if out.get("name") in ("stdout", "stderr") else "stdout"
        return nbformat.v4.new_output("stream", name=name, text=_clean(text))
    if kind == "error":
        ename, evalue = str(out.get("ename", "")), _clean(str(out.get("evalue", "")))
        return nbformat.v4.new_output(
            "error", ename=ename, evalue=evalue, traceback=[_clean(f"{ename}: {evalue}")]
        )
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
            kept["text/plain"] = _clean(plain)
        if not kept:
            return None
        if kind == "execute_result":
            return nbformat.v4.new_output("execute_result", data=kept, execution_count=None)
        return nbformat.v4.new_output("display_data", data=kept)
    return None


def public_notebook(nb: nbformat.NotebookNode, title: str = "") -> nbformat.NotebookNode:
    """The executed notebook as the student may see it, and as no browser can be made to run."""
    src = copy.deepcopy(nb)
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
                source = HIDDEN.sub("# (the grader also runs hidden tests here)\n", source)
            new = nbformat.v4.new_code_cell(source)
            count = cell.get("execution_count")
            new.execution_count = count if isinstance(count, int) and not isinstance(count, bool) else None
            new.outputs = [o for o in map(_safe_output, cell.get("outputs", [])) if o is not None]
        elif cell.cell_type == "markdown":
            new = nbformat.v4.new_markdown_cell(source)
        else:  # raw cells: shown as text
            new = nbformat.v4.new_markdown_cell("```\n" + source.replace("```", "` ` `") + "\n```")
        new["id"] = cid
        out.cells.append(new)
    return out


# ---------------------------------------------------------------------------------------------
# the summary at the top of the page

SCORES_BEGIN, SCORES_END = "<!--tbb-scores-->", "<!--/tbb-scores-->"


def scores_html(rows) -> str:
    """Points and the per-question table; the part `update_scores()` replaces when a person grades
    in formgrader."""
    pts = sum(r.points for r in rows)
    mx = sum(r.max_points for r in rows)
    pending = sum(r.max_points for r in rows if r.status == "needs grading")
    lines = [SCORES_BEGIN, f"<p class='total'><b>{pts:g} / {mx:g} points</b>"]
    if pending:
        lines.append(f" ({pending:g} of them for written answers not graded yet)")
    lines.append("</p>")
    lines.append(
        "<table class='questions'><tr><th>question</th><th>points</th><th>status</th>"
        "<th>what to look at</th></tr>"
    )
    for r in rows:
        msg = html.escape(r.message or ("all checks pass" if r.status == "passed" else ""))
        status = html.escape(r.status)
        lines.append(
            f"<tr class='{status.replace(' ', '-')}'><td><code>{html.escape(r.question)}</code></td>"
            f"<td>{r.points:g} / {r.max_points:g}</td><td>{status}</td>"
            f"<td><pre>{msg}</pre></td></tr>"
        )
    lines += ["</table>", SCORES_END]
    return "\n".join(lines)


def summary_html(sub, rows, notes) -> str:
    lines = [
        f"<h1>{html.escape(sub.lesson)}: feedback for {html.escape(sub.student)}</h1>",
        scores_html(rows),
    ]
    for note in notes:
        lines.append(f"<p class='note'>Note: {html.escape(note)}</p>")
    return "\n".join(lines)


def update_scores(page: str, rows) -> str:
    """The page with its points and question table replaced (grades and comments given by hand)."""
    start, end = page.find(SCORES_BEGIN), page.find(SCORES_END)
    if start < 0 or end < start:
        return page
    return page[:start] + scores_html(rows) + page[end + len(SCORES_END) :]


STYLE = """<style>
.tbb-summary{font-family:system-ui,sans-serif;max-width:1000px;margin:1em auto;padding:0 1em}
.tbb-summary table{border-collapse:collapse;width:100%}
.tbb-summary td,.tbb-summary th{border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left}
.tbb-summary th{background:#f3f3f3}
.tbb-summary tr.passed td:nth-child(3){color:#1a7f37}.tbb-summary tr.failed td:nth-child(3),
.tbb-summary tr.error td:nth-child(3),.tbb-summary tr.ungradable td:nth-child(3){color:#cf222e}
.tbb-summary tr.needs-grading td:nth-child(3){color:#9a6700}
.tbb-summary pre{white-space:pre-wrap;margin:0;font-size:12px}
.tbb-summary .note{color:#57606a}
</style>"""


def plain_page(sub, rows, notes=()) -> str:
    """A page without a notebook (the submission could not be read or run), styled like the rest."""
    title = html.escape(f"{sub.lesson}: feedback for {sub.student}")
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
        "<meta name='referrer' content='no-referrer'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1.0'><title>{title}</title>"
        f"{STYLE}</head><body><div class='tbb-summary'>{summary_html(sub, rows, list(notes))}"
        "<p>Nothing of the notebook could be shown: see the message above, fix the file and "
        "submit it again.</p></div></body></html>\n"
    )


# every page repeats the lesson's own cells: their rendering is kept, keyed by what it depends on
MEMO_CELLS = 4096


@functools.cache
def _exporter() -> HTMLExporter:
    """The feedback page's exporter (loading its templates takes a while: once per process), with
    markdown, code highlighting and nbconvert's HTML cleaning memoised per text. Pages are built
    from `public_notebook()`, whose cells carry no attachments and no metadata, so each of these
    is a function of the text alone."""
    exporter = HTMLExporter(
        template_name="feedback",
        extra_template_basedirs=[str(Path(__file__).resolve().parent / "templates")],
    )
    highlight = Highlight2HTML(pygments_lexer="ipython3", parent=exporter)

    @functools.lru_cache(maxsize=MEMO_CELLS)
    def markdown(source: str) -> str:
        return clean(exporter.markdown2html({}, source))

    @functools.lru_cache(maxsize=MEMO_CELLS)
    def highlighted(source: str, language) -> str:
        return highlight(source, language)

    def highlight_code(source, language=None, metadata=None):
        return highlighted(source, language) if not metadata else highlight(source, language, metadata)

    exporter.filters = {
        "tbb_markdown": markdown,
        "highlight_code": highlight_code,
        "clean_html": functools.lru_cache(maxsize=MEMO_CELLS)(nbconvert_clean_html),
    }
    exporter.exclude_input_prompt = False
    return exporter


def render(sub, nb, rows, notes, source=None) -> str:
    body, _ = _exporter().from_notebook_node(public_notebook(nb, f"{sub.lesson}: feedback for {sub.student}"))
    head = STYLE + "<div class='tbb-summary'>" + summary_html(sub, rows, notes) + "</div>"
    return re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + head, body, count=1)


# ---------------------------------------------------------------------------------------------
# offline assets


def mathjax_es5() -> Path | None:
    """MathJax 3 from npm (site/package-lock.json, the site's copy), installed once with `npm ci`
    under the site's lock; None when npm is missing (the pages then show the TeX as text)."""
    if (MATHJAX_ES5 / MATHJAX_FILES[0]).exists():
        return MATHJAX_ES5
    npm = shutil.which("npm")
    if npm is None or not (SITE / "package-lock.json").exists():
        return None
    with open(SITE / ".npm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (MATHJAX_ES5 / MATHJAX_FILES[0]).exists():
            proc = subprocess.run(
                [npm, "ci", "--prefix", str(SITE), "--no-audit", "--no-fund", "--loglevel=error"],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                print(f"warning: npm ci for MathJax failed: {proc.stderr[-500:]}", file=sys.stderr)
                return None
    return MATHJAX_ES5


def install_assets(feedback: Path) -> bool:
    """Put MathJax and its configuration into `feedback/_assets/` (once). False when MathJax is
    not available (no npm): pages still work, math shows as TeX."""
    dest = Path(feedback) / ASSETS
    dest.mkdir(parents=True, exist_ok=True)
    config = dest / "mathjax-config.js"
    if not config.exists() or config.read_text() != MATHJAX_CONFIG:
        config.write_text(MATHJAX_CONFIG)
    if (dest / "mathjax" / MATHJAX_FILES[0]).exists():
        return True
    es5 = mathjax_es5()
    if es5 is None:
        print("warning: no npm, so no local MathJax: feedback pages show math as TeX", file=sys.stderr)
        return False
    for rel in MATHJAX_FILES:
        src, dst = es5 / rel, dest / "mathjax" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copyfile(src, dst)
    return True


def unanswered(text: str) -> bool:
    return text.strip() in ("", TEXT_STUB)
