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
local copy in `OUT/feedback/_assets/`, from the same npm package as the site). The notebook the
page shows is `public.public_notebook`'s; the assets are `assets.py`'s.
"""

from __future__ import annotations

import functools
import html
import re
from types import MappingProxyType

import nbformat
import pygments
from byhand import i18n
from byhand.i18n import N_
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from autograder.course import ROOT, SOLUTIONS
from autograder.record.public import HIDDEN_LINE, TAGS, clean, public_notebook

CUT_NOTE = N_("… {n} more characters of this output are not shown")
CSP = (
    "default-src 'none'; script-src 'self' file:; style-src 'self' file: 'unsafe-inline'; "
    "img-src 'self' file: data:; font-src 'self' file: data:; base-uri 'none'; form-action 'none'"
)

_LEXER = PythonLexer()
_FORMATTER = HtmlFormatter(cssclass="highlight")


# ---------------------------------------------------------------------------------------------
# the summary at the top of the page

SCORES_BEGIN, SCORES_END = "<!--tbb-scores-->", "<!--/tbb-scores-->"


def scores_html(rows, lang: str | None = None) -> str:
    """Points and the per-question table; the part `update_scores()` replaces when a person grades
    in formgrader."""
    pts = sum(r.points for r in rows)
    mx = sum(r.max_points for r in rows)
    pending = sum(r.max_points for r in rows if r.status == "needs grading")
    total = _t("{points} / {max_points} points", lang, points=f"{pts:g}", max_points=f"{mx:g}")
    lines = [SCORES_BEGIN, f"<p class='total'><b>{html.escape(total)}</b>"]
    if pending:
        pending_text = _t(
            "({pending} of them for written answers not graded yet)", lang, pending=f"{pending:g}"
        )
        lines.append(" " + html.escape(pending_text))
    lines.append("</p>")
    head = (N_("question"), N_("points"), N_("status"), N_("what to look at"))
    lines.append(
        "<table class='questions'><tr>"
        + "".join(f"<th>{html.escape(_t(h, lang))}</th>" for h in head)
        + "</tr>"
    )
    for r in rows:
        msg = html.escape(r.message or (_t("all checks pass", lang) if r.status == "passed" else ""))
        status = html.escape(str(r.status))
        lines.append(
            f"<tr class='{status.replace(' ', '-')}'><td><code>{html.escape(r.question)}</code></td>"
            f"<td>{r.points:g} / {r.max_points:g}</td><td>{html.escape(_t(str(r.status), lang))}</td>"
            f"<td><pre>{msg}</pre></td></tr>"
        )
    lines += ["</table>", SCORES_END]
    return "\n".join(lines)


def summary_html(sub, rows, notes, lang: str | None = None) -> str:
    title = _t("{lesson}: feedback for {student}", lang, lesson=sub.lesson, student=sub.student)
    lines = [f"<h1>{html.escape(title)}</h1>", scores_html(rows, lang)]
    for note in notes:
        lines.append(f"<p class='note'>{html.escape(_t('Note: {note}', lang, note=note))}</p>")
    return "\n".join(lines)


def update_scores(page: str, rows) -> str:
    """The page with its points and question table replaced (grades and comments given by hand),
    in the page's own language."""
    start, end = page.find(SCORES_BEGIN), page.find(SCORES_END)
    if start < 0 or end < start:
        return page
    found = re.search(r"<html lang='([A-Za-z-]+)'", page[:300])
    lang = {v: k for k, v in HTML_LANG.items()}.get(found.group(1) if found else "en", "en")
    return page[:start] + scores_html(rows, lang) + page[end + len(SCORES_END) :]


LATE_BEGIN, LATE_END = "<!--tbb-late-->", "<!--/tbb-late-->"


def late_text(row: dict, lang: str | None = None) -> str:
    """What a late submission's page tells its student (`row`: a row of OUT/submissions.csv)."""
    if row.get("late_by_hours"):
        deadline = row["deadline"].replace("T", " ")
        parts = [
            _t(
                "Submitted late: {hours} hours after the deadline ({deadline}).",
                lang,
                hours=row["late_by_hours"],
                deadline=deadline,
            )
        ]
    else:
        parts = [_t("Marked late by the LMS (the submission time is not in the export).", lang)]
    if row.get("penalty_percent") not in ("", "0", None):
        parts.append(
            _t(
                "Late penalty {percent}%: {points} points count as {after}.",
                lang,
                percent=row["penalty_percent"],
                points=row["points"],
                after=row["points_after_penalty"],
            )
        )
    return " ".join(parts)


def set_late_notice(page: str, text: str) -> str:
    """The page with its lateness notice (below the points) set to `text`, or taken off when empty."""
    start, end = page.find(LATE_BEGIN), page.find(LATE_END)
    if 0 <= start < end:
        page = page[:start] + page[end + len(LATE_END) :]
    if not text:
        return page
    at = page.find(SCORES_END)
    if at < 0:
        return page
    at += len(SCORES_END)
    notice = f"{LATE_BEGIN}<p class='late' style='color:#9a6700'><b>{html.escape(text)}</b></p>{LATE_END}"
    return page[:at] + notice + page[at:]


# Latin fonts first, then the common CJK ones of each system (macOS, Windows, Linux, Android), so a
# Chinese page shows its Han characters in a real Chinese font, not whatever fallback the browser picks
FONTS = (
    'system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","PingFang SC",'
    '"Hiragino Sans GB","Microsoft YaHei","Noto Sans CJK SC","Source Han Sans SC","WenQuanYi Micro Hei",'
    '"WenQuanYi Zen Hei",sans-serif'
)
MONO_FONTS = (
    'ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono","Noto Sans Mono CJK SC",'
    '"Sarasa Mono SC","Microsoft YaHei",monospace'
)
# The points and status columns are as wide as their text, never one character wide (CJK text may
# break between any two characters, so an auto table squeezes it when the message column is long)
STYLE = f"""<style>
.tbb-summary{{font-family:{FONTS};max-width:1000px;margin:1em auto;padding:0 1em}}
.tbb-summary table{{border-collapse:collapse;width:100%;table-layout:auto}}
.tbb-summary td,.tbb-summary th{{border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left}}
.tbb-summary th,.tbb-summary td:nth-child(-n+3){{white-space:nowrap}}
.tbb-summary td:nth-child(4){{width:100%}}
.tbb-summary th{{background:#f3f3f3}}
.tbb-summary tr.passed td:nth-child(3){{color:#1a7f37}}.tbb-summary tr.failed td:nth-child(3),
.tbb-summary tr.error td:nth-child(3),.tbb-summary tr.ungradable td:nth-child(3){{color:#cf222e}}
.tbb-summary tr.needs-grading td:nth-child(3){{color:#9a6700}}
.tbb-summary pre{{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font:12px/1.45 {MONO_FONTS}}}
.tbb-summary .note{{color:#57606a}}
</style>"""


def plain_page(sub, rows, notes=(), lang: str | None = None) -> str:
    """A page without a notebook (the submission could not be read or run), styled like the rest."""
    title = _t("{lesson}: feedback for {student}", lang, lesson=sub.lesson, student=sub.student)
    nothing = _t(
        "Nothing of the notebook could be shown: see the message above, fix the file and submit it again.",
        lang,
    )
    return (
        _head(title, lang or "en")
        + f"{STYLE}</head><body><div class='tbb-summary'>{summary_html(sub, rows, list(notes), lang)}"
        + f"<p>{html.escape(nothing)}</p></div></body></html>\n"
    )


# ---------------------------------------------------------------------------------------------
# the page: the lesson's own cells rendered once per process, the submission's escaped by construction

# What a page shows of one output at most (the notebook kept for formgrader has its own, larger cap:
# run/runner.py); the rest is named, not shown.
PAGE_OUTPUT_CHARS = 20_000
IMAGE = re.compile(r"^data:image/(?:png|jpeg);base64,[A-Za-z0-9+/=]+$")
# the only markup an escaping render can produce; anything else means a renderer bug: shown as text
ESCAPED_TAGS = re.compile(r"</?([a-zA-Z][a-zA-Z0-9]*)\b")
CODE_STYLE = ".highlight"
PAGE_CSS = f"""
body{{margin:0;background:#fff;color:#1f2328}}
.tbb-notebook{{font-family:{FONTS};max-width:1000px;margin:0 auto 3em;padding:0 1em;line-height:1.5}}
.tbb-cell{{margin:.6em 0}}
.tbb-in{{display:flex;gap:.5em}}
.tbb-prompt{{flex:0 0 5.5em;color:#307fc1;font:12px/1.9 {MONO_FONTS};text-align:right;user-select:none}}
.tbb-out .tbb-prompt{{color:#bf5b3d}}
.tbb-src{{flex:1;min-width:0;background:#f7f7f7;border:1px solid #e0e0e0;border-radius:2px}}
.tbb-src pre,.tbb-out pre{{margin:0;padding:4px 8px;font:13px/1.4 {MONO_FONTS};white-space:pre-wrap;word-break:break-word}}
.tbb-out{{display:flex;gap:.5em;margin-top:2px}}
.tbb-out>div{{flex:1;min-width:0}}
.tbb-out pre.stderr{{background:#fdd}}
.tbb-out pre.error{{color:#b22b31}}
.tbb-out img{{max-width:100%}}
.tbb-cut{{color:#57606a;font-style:italic}}
.tbb-md{{padding:0 .5em 0 6em}}
.tbb-md table{{border-collapse:collapse}}.tbb-md td,.tbb-md th{{border:1px solid #ccc;padding:2px 6px}}
.tbb-md pre{{background:#f7f7f7;padding:4px 8px;overflow-x:auto}}
"""

# The page's own words are English templates, in the submitted notebook's language through the
# gettext catalogue (`byhand.i18n.page`; `make messages`, autograder/tooling/messages.py)
# the statuses as grades.csv spells them (outcomes.Status), shown in the page's language
STATUS_WORDS = (N_("passed"), N_("failed"), N_("error"), N_("ungradable"), N_("needs grading"))
HTML_LANG = MappingProxyType({"en": "en", "zh_CN": "zh-CN"})


def _t(english: str, lang: str | None, **values) -> str:
    return i18n.page(english, lang or i18n.DEFAULT, **values)


@functools.cache
def _lesson_markdown(lesson: str) -> frozenset:
    """Every markdown text of a lesson as released, in every language: the text the grader trusts
    (rendered with the lesson's own markdown, raw HTML included, and memoised)."""
    texts = set()
    for path in [SOLUTIONS / f"{lesson}.ipynb", *sorted((ROOT / "notebooks").rglob(f"{lesson}.ipynb"))]:
        if path.exists():
            texts.update(
                c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"
            )
    return frozenset(texts)


@functools.lru_cache(maxsize=4096)
def _trusted_markdown(source: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return clean(markdown2html_mistune(source))


class _EscapingRenderer(IPythonRenderer):
    """Markdown a submission wrote: raw HTML shown as text, links only to harmless protocols,
    images only as inline PNG/JPEG data, code blocks highlighted or escaped, no anchors."""

    def __init__(self):
        super().__init__(escape=True, allow_harmful_protocols=False, exclude_anchor_links=True)

    def block_mermaidjs(self, code: str) -> str:
        return f"<pre><code>{html.escape(code)}</code></pre>"

    def image(self, text: str, url: str, title=None) -> str:
        if IMAGE.match(url or ""):
            return f'<img src="{html.escape(url)}" alt="{html.escape(text or "")}">'
        return html.escape(text or "")


def _untrusted_markdown(source: str) -> str:
    try:
        rendered = MarkdownWithMath(renderer=_EscapingRenderer()).render(source)
    except Exception:  # noqa: BLE001 - whatever the renderer cannot take is shown as it was typed
        rendered = ""
    if not rendered or any(t.lower() not in TAGS for t in ESCAPED_TAGS.findall(rendered)):
        return f"<pre>{html.escape(source)}</pre>"
    return rendered


@functools.lru_cache(maxsize=4096)
def _highlighted(source: str) -> str:
    return pygments.highlight(source, _LEXER, _FORMATTER)


def _text(text: str, lang: str | None, css: str = "") -> str:
    cut = ""
    if len(text) > PAGE_OUTPUT_CHARS:
        cut = f"<div class='tbb-cut'>{html.escape(_t(CUT_NOTE, lang, n=len(text) - PAGE_OUTPUT_CHARS))}</div>"
        text = text[:PAGE_OUTPUT_CHARS]
    cls = f" class='{css}'" if css else ""
    return f"<pre{cls}>{html.escape(text)}</pre>{cut}"


def _output_html(out, lang: str | None) -> str:
    kind = out.get("output_type")
    if kind == "stream":
        return _text(out.get("text", ""), lang, "stderr" if out.get("name") == "stderr" else "")
    if kind == "error":
        return _text(f"{out.get('ename', '')}: {out.get('evalue', '')}", lang, "error")
    data = out.get("data", {})
    for mime in ("image/png", "image/jpeg"):
        if mime in data:  # checked base64 (public_notebook)
            b64 = re.sub(r"\s", "", data[mime])
            return f'<img src="data:{mime};base64,{b64}" alt="">'
    return _text(data.get("text/plain", ""), lang)


def _cell_html(cell, lang: str | None, trusted: frozenset) -> str:
    cid = html.escape(cell["id"])
    if cell.cell_type == "markdown":
        src = cell.source
        body = _trusted_markdown(src) if src in trusted else _untrusted_markdown(src)
        return f"<div class='tbb-cell tbb-md' id='{cid}'>{body}</div>"
    count = cell.get("execution_count")
    prompt = f"[{count}]:" if count is not None else "[ ]:"
    # JupyterLab's own prompt is "[1]:"; the classic "In" stays for English pages only
    if (lang or "en") == "en":
        prompt = f"In&nbsp;{prompt}"
    parts = [
        f"<div class='tbb-cell' id='{cid}'><div class='tbb-in'><div class='tbb-prompt'>{prompt}</div>"
        f"<div class='tbb-src'>{_highlighted(cell.source)}</div></div>"
    ]
    outs = "".join(_output_html(o, lang) for o in cell.get("outputs", []))
    if outs:
        parts.append(f"<div class='tbb-out'><div class='tbb-prompt'></div><div>{outs}</div></div>")
    parts.append("</div>")
    return "".join(parts)


def _head(title: str, lang: str) -> str:
    return (
        f"<!DOCTYPE html>\n<html lang='{HTML_LANG.get(lang, 'en')}'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
        "<meta name='referrer' content='no-referrer'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1.0'><title>{html.escape(title)}</title>"
    )


@functools.cache
def _code_css() -> str:
    return _FORMATTER.get_style_defs(CODE_STYLE)


def render(sub, nb, rows, notes, source=None, lang: str | None = None) -> str:
    """The feedback page of one graded submission. The lesson's own markdown (the same text as the
    released notebook, in any language) is rendered once per process and reused; everything the
    submission controls is built as escaped text, so no HTML sanitizer has to read it."""
    title = _t("{lesson}: feedback for {student}", lang, lesson=sub.lesson, student=sub.student)
    public = public_notebook(nb, hidden_line=_t(HIDDEN_LINE, lang))
    trusted = _lesson_markdown(sub.lesson) if sub.lesson else frozenset()
    body = "\n".join(_cell_html(c, lang, trusted) for c in public.cells)
    return (
        _head(title, lang or "en")
        + "<script src='../_assets/mathjax-config.js'></script>"
        + "<script src='../_assets/mathjax/tex-chtml-full.js' id='MathJax-script'></script>"
        + f"<style>{PAGE_CSS}{_code_css()}</style>{STYLE}</head><body>"
        + f"<div class='tbb-summary'>{summary_html(sub, rows, notes, lang)}</div>"
        + f"<main class='tbb-notebook'>\n{body}\n</main></body></html>\n"
    )
