"""A lesson and its translation side by side, for a reader who reviews the translation.

`make review-zh LESSON=09_modern_block` writes build/review/09.html: one row per cell of the lesson,
the English on the left and the translation on the right, in notebook order. A row is flagged

- **stale** when the English changed under its translation (the entry's hash no longer matches the
  cell: the old translation is shown, with the English it no longer follows);
- **missing** when a text cell has no translation;
- **graded** for a self-check or answer cell whose comments have no translation (the two editions
  share it as it is); a translated one is shown as the student notebook has it, hidden tests and
  solution left out.

It reads the same files `python -m autograder translations` does, so what it flags is what that
report counts; nothing is executed.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from autograder import course
from autograder.tooling import student, translations

CURRENT, STALE, MISSING, GRADED, SAME = "current", "stale", "missing", "graded", "same"
LABELS = MappingProxyType(
    {
        CURRENT: "",
        STALE: "stale: the English changed since this translation",
        MISSING: "missing: no translation",
        GRADED: "graded cell, not translated: the same in both editions",
        SAME: "the same code in both editions (no text to translate)",
    }
)


@dataclass(frozen=True)
class Row:
    cell: str
    kind: str  # markdown / code
    english: str
    translated: str
    state: str


def rows(lesson: str, lang: str) -> list:
    """The lesson's cells in order, each with its translation and how current that is."""
    entries = translations.load(lesson, lang)
    by_hash = {e.en: e for e in entries}
    by_cell = {e.cell: e for e in entries}
    code = translations.code_translations(lesson, lang)
    code_path = translations.code_path(lesson, lang)
    code_by_cell = (
        {e.cell: e for e in translations.parse(code_path.read_text(encoding="utf-8"))}
        if code_path.exists()
        else {}
    )
    released = {c.get("id"): c.source for c in translations.released_code_cells(lesson)}
    out = []
    for cell in course.read_solution(lesson).cells:
        cid, src, meta = cell.get("id", ""), cell.source, course.nbgrader_meta(cell)
        h = translations.en_hash(src)
        if cell.cell_type == "markdown":
            if meta.get("solution"):
                out.append(Row(cid, "markdown", src, "", GRADED))
            elif h in by_hash:
                out.append(Row(cid, "markdown", src, by_hash[h].text, CURRENT))
            elif cid in by_cell:
                out.append(Row(cid, "markdown", src, by_cell[cid].text, STALE))
            else:
                out.append(Row(cid, "markdown", src, "", MISSING))
        elif cell.cell_type == "code":
            if meta:  # a self-check or an answer stub, as the student notebook has it
                src = released.get(cid, src)
                h = translations.en_hash(src)
                if h in code:
                    out.append(Row(cid, "code", src, code[h], CURRENT))
                elif cid in code_by_cell:
                    out.append(Row(cid, "code", src, code_by_cell[cid].text, STALE))
                else:
                    out.append(Row(cid, "code", src, "", GRADED))
            elif student.is_setup(cell):
                text = translations.setup_text(
                    src.rstrip("\n") + "\n" + translations.language_line(lang), lang
                )
                out.append(Row(cid, "code", src, text, CURRENT))
            elif h in code:
                out.append(Row(cid, "code", src, code[h], CURRENT))
            elif cid in code_by_cell:
                out.append(Row(cid, "code", src, code_by_cell[cid].text, STALE))
            else:  # no translation: tests/test_zh_prose.py holds it has no English prose to translate
                out.append(Row(cid, "code", src, "", SAME))
    return out


CSS = """
body { font: 15px/1.6 system-ui, "Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei", sans-serif; margin: 1.5em; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
td, th { border: 1px solid #ccc; padding: .5em; vertical-align: top; }
th { background: #f4f4f4; position: sticky; top: 0; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; font: 13px/1.5 ui-monospace, monospace; }
td.text pre { font: inherit; }
tr.stale td { background: #fff3cd; } tr.missing td { background: #fde2e1; }
tr.graded td, tr.same td { color: #777; }
.flag { font-weight: bold; display: block; margin-bottom: .3em; }
.id { color: #888; font-size: 12px; }
"""


def render(lesson: str, lang: str) -> str:
    """The side-by-side page of one lesson."""
    table = rows(lesson, lang)
    counts = {s: sum(r.state == s for r in table) for s in (CURRENT, STALE, MISSING)}
    out = [
        "<!DOCTYPE html>",
        f'<html lang="{lang.replace("_", "-")}"><head><meta charset="utf-8">',
        f"<title>{html.escape(lesson)}: English / {html.escape(translations.LANGUAGES.get(lang, lang))}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{html.escape(lesson)}: English / {html.escape(translations.LANGUAGES.get(lang, lang))}</h1>",
        f"<p>{counts[CURRENT]} current, <b>{counts[STALE]} stale</b>, <b>{counts[MISSING]} missing</b>. "
        f"Sources: <code>solutions/{html.escape(lesson)}.ipynb</code>, "
        f"<code>translations/{lang}/{html.escape(lesson)}.md</code> and <code>code/{html.escape(lesson)}.md</code>.</p>",
        '<table><tr><th style="width:8em">cell</th><th>English</th><th>'
        f"{html.escape(translations.LANGUAGES.get(lang, lang))}</th></tr>",
    ]
    for r in table:
        flag = f'<span class="flag">{html.escape(LABELS[r.state])}</span>' if LABELS[r.state] else ""
        klass = "text" if r.kind == "markdown" else "code"
        out.append(
            f'<tr class="{r.state}" id="{html.escape(r.cell)}"><td><span class="id">{html.escape(r.cell)}</span>'
            f"<br>{r.kind}</td>"
            f'<td class="{klass}"><pre>{html.escape(r.english)}</pre></td>'
            f'<td class="{klass}">{flag}<pre>{html.escape(r.translated)}</pre></td></tr>'
        )
    out.append("</table></body></html>")
    return "\n".join(out) + "\n"


def write(lesson: str, lang: str, out_dir: Path | None = None) -> Path:
    """build/review/<NN>.html (NN: the lesson's number) for `lesson` in `lang`."""
    out_dir = out_dir or course.BUILD / "review"
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = "" if lang == "zh_CN" else f".{lang}"
    path = out_dir / f"{lesson.split('_', 1)[0]}{suffix}.html"
    path.write_text(render(lesson, lang), encoding="utf-8")
    return path
