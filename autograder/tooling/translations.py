"""Translations of the lessons' text, kept beside the English source and never a copy of it.

`solutions/` is the one source. `translations/<lang>/<lesson>.md` holds, for each markdown cell of
the lesson, its translated text under a marker line that records which English text it translates:

    <!-- cell-003 en=3f2a9c1b0d4e -->
    ## 缩放点积注意力
    ...

`en=` is the start of the SHA-256 of the English cell's source. A cell whose English text changed has
no entry with its new hash: it is *stale*, and `python -m autograder translations` lists it with the
translation it had (found by cell id) so a translator can bring it up to date; the same for the
translated comments and prints of code cells (`translations/<lang>/code/`, `stale_code`). The cell id is only a
help for that: matching is by hash, so inserting a cell elsewhere never misplaces a translation.
"""

from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import nbformat
from byhand import i18n
from byhand.i18n import N_

from autograder import course
from autograder.tooling import student

ROOT = course.ROOT
TRANSLATIONS = ROOT / "translations"
LANGUAGES = MappingProxyType({"zh_CN": "简体中文"})

# The setup cell's lines when the package is missing (autograder/tooling/student.py SETUP_BLOCK) and
# the lessons' own setup lines (why one thread, what a helper of an earlier lesson does): catalogue
# ids, each replaced by its translation in a translated notebook's setup cell (`setup_text`)
SETUP = (
    N_(
        "# The self-checks come from the course's package `byhand` (it needs torch, numpy, regex and matplotlib)."
    ),
    N_("  # or the .whl from the course site"),
    N_("  # Colab: install it here"),
    N_("print(f'Self-checks are off. To turn them on: pip install \"{BYHAND}\", then restart the kernel.')"),
    N_("  # a stand-in: each self-check says it is off, every other cell still runs"),
    N_("print(f'{name}: self-checks are off (to turn them on: pip install \"{BYHAND}\")')"),
    N_("  # the self-checks speak zh_CN"),
    N_("  # the plots' labels: a CJK font when one is installed"),
    N_("# tiny tensors: one thread is faster, and the same on every machine"),
    N_("# small tensors: one thread is faster, and the same on every machine"),
    N_("# small tensors: one thread is fastest here, and repeatable"),
    N_("# the models here are tiny: one thread is the fastest, and bit-reproducible"),
    N_("# noqa: F401 - for the answers: positional encodings use it"),
    N_('"""LayerNorm of lesson 2 from primitive ops: x (..., d) -> (..., d)."""'),
    N_('"""Attention of lesson 1: softmax(q k^T / sqrt(d_k), masked) v; a fully masked row gives 0."""'),
    N_('"""Attention of lesson 1 (scale 1/sqrt(d)): builds the whole (..., Lq, Lk) score matrix."""'),
    N_("  # GPT-2's pattern needs \\p{L} (any letter) and \\p{N} (any digit): the standard `re` has neither"),
    N_("  # it comes with the checks package, which the block below installs or names"),
    N_("  # nothing here is random; the course seeds every lesson the same way"),
    N_(
        "# GPT-2's pre-tokenization pattern: contractions, words (with the space before them), numbers,\n"
        "# punctuation runs, whitespace"
    ),
    N_("# given: your answers use these two"),
    N_(
        '"""`seq` with every occurrence of `pair` (left to right) replaced by one token, their bytes joined."""'
    ),
    N_('"""How much of `buffer` can be encoded now: what comes after it cannot change its tokens."""'),
    N_("  # ends with a whole special token"),
)

# added under each written question in a translated notebook (the answer cell keeps nbgrader's
# placeholder, which must go); nothing in English
WRITTEN_ANSWER_NOTE = N_(
    "You may answer in Chinese or English. First delete `YOUR ANSWER HERE` in the cell below, then "
    "write your answer."
)

# the note a translated notebook carries while its translation is behind the English lesson
STALE_EDITION = N_(
    "**This edition is behind the English one**: {n} of its texts are not translated yet and are shown "
    "in English."
)

MARKER = re.compile(r"^<!-- (?P<cell>[\w.-]+) en=(?P<hash>[0-9a-f]{12}) -->$", re.M)
TODO = "TODO: translate"


def en_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Entry:
    cell: str  # the id of the cell it was written for (a help for translators, not the key)
    en: str  # hash of the English text it translates
    text: str


@dataclass
class Status:
    """How far a lesson's translation is from its English source."""

    lesson: str
    lang: str
    missing: list = field(default_factory=list)  # (cell id, English source): no entry at all
    stale: list = field(default_factory=list)  # (cell id, English source, old Entry)
    untranslated: list = field(default_factory=list)  # cell ids whose entry is still a TODO skeleton
    orphans: list = field(default_factory=list)  # entries that translate no current cell

    @property
    def current(self) -> bool:
        return not (self.missing or self.stale or self.untranslated or self.orphans)


def path_for(lesson: str, lang: str) -> Path:
    return TRANSLATIONS / lang / f"{lesson}.md"


def translatable_cells(nb) -> list:
    """(cell id, source) of the markdown cells a translation covers: every text cell except
    students' written-answer cells (what a student writes there is theirs)."""
    return [
        (c["id"], c.source)
        for c in nb.cells
        if c.cell_type == "markdown" and not course.nbgrader_meta(c).get("solution")
    ]


def parse(text: str) -> list:
    """The entries of one translation file, in file order."""
    marks = list(MARKER.finditer(text))
    entries = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        entries.append(Entry(m["cell"], m["hash"], text[m.end() : end].strip("\n")))
    return entries


def load(lesson: str, lang: str) -> list:
    path = path_for(lesson, lang)
    return parse(path.read_text(encoding="utf-8")) if path.exists() else []


def dump(entries: list) -> str:
    return "\n\n".join(f"<!-- {e.cell} en={e.en} -->\n{e.text}" for e in entries) + "\n"


def status(lesson: str, lang: str) -> Status:
    entries = load(lesson, lang)
    by_hash = {e.en: e for e in entries}
    by_cell = {e.cell: e for e in entries}
    st = Status(lesson, lang)
    used = set()
    for cell_id, source in translatable_cells(course.read_solution(lesson)):
        h = en_hash(source)
        if h in by_hash:
            used.add(h)
            if by_hash[h].text.startswith(TODO):
                st.untranslated.append(cell_id)
        elif cell_id in by_cell:
            st.stale.append((cell_id, source, by_cell[cell_id]))
        else:
            st.missing.append((cell_id, source))
    stale_hashes = {old.en for _, _, old in st.stale}
    st.orphans = [e for e in entries if e.en not in used and e.en not in stale_hashes]
    return st


STALE_NOTE_ID = "translation-stale"


def translate(
    nb: nbformat.NotebookNode, lesson: str, lang: str, stale_ok: bool = False
) -> nbformat.NotebookNode:
    """`nb` (a solution or student notebook of `lesson`) with its text in `lang`. Code cells, ids and
    nbgrader metadata are untouched; raises when the translation is not current, unless `stale_ok`:
    then the cells without a current translation stay English and a note at the top, in `lang`,
    says the edition is behind the English one (`make release` of an English-only class that added
    an exercise: the Chinese edition flags itself stale instead of blocking)."""
    st = status(lesson, lang)
    if not st.current and stale_ok:
        return _translate_stale(nb, lesson, lang, st)
    if not st.current:
        raise ValueError(
            f"translations/{lang}/{lesson}.md is not current: {len(st.missing)} missing, "
            f"{len(st.stale)} stale, {len(st.untranslated)} untranslated, {len(st.orphans)} orphaned "
            f"entries (run `python -m autograder translations`)"
        )
    by_hash = {e.en: e.text for e in load(lesson, lang)}
    code = code_translations(lesson, lang)
    out = copy.deepcopy(nb)
    for i, cell in enumerate(out.cells):
        if cell.cell_type == "code" and en_hash(cell.source) in code:
            # the same code, its comments, docstrings and prints translated; a graded cell (a
            # self-check, an answer's stub) is matched as released, hidden tests and solution gone
            cell.source = code[en_hash(cell.source)]
            continue
        if cell.cell_type == "markdown" and not course.nbgrader_meta(cell).get("solution"):
            cell.source = by_hash[en_hash(cell.source)]
            note = _translated(WRITTEN_ANSWER_NOTE, lang)
            if _asks_for_written_answer(out.cells, i) and note:
                cell.source = cell.source.rstrip("\n") + "\n\n" + note
        elif student.is_setup(cell):
            cell.source = setup_text(cell.source.rstrip("\n") + "\n" + language_line(lang), lang)
    out.metadata["language"] = lang  # the checks and the grader speak the notebook's language
    return out


def _translate_stale(nb, lesson: str, lang: str, st: Status) -> nbformat.NotebookNode:
    by_hash = {e.en: e.text for e in load(lesson, lang) if not e.text.startswith(TODO)}
    code = code_translations(lesson, lang)
    out = copy.deepcopy(nb)
    behind = 0
    for cell in out.cells:
        if cell.cell_type == "code" and en_hash(cell.source) in code and not course.nbgrader_meta(cell):
            cell.source = code[en_hash(cell.source)]
        elif cell.cell_type == "markdown" and not course.nbgrader_meta(cell).get("solution"):
            if en_hash(cell.source) in by_hash:
                cell.source = by_hash[en_hash(cell.source)]
            else:
                behind += 1
        elif student.is_setup(cell):
            cell.source = setup_text(cell.source.rstrip("\n") + "\n" + language_line(lang), lang)
    template = i18n.translations(lang).gettext(STALE_EDITION)
    note = nbformat.v4.new_markdown_cell(template.format(n=behind))
    note["id"] = STALE_NOTE_ID
    out.cells.insert(1 if out.cells and out.cells[0].cell_type == "markdown" else 0, note)
    out.metadata["language"] = lang
    out.metadata["translation_stale"] = True
    return out


def _translated(english: str, lang: str) -> str:
    """`english` (a catalogue id) in `lang` from byhand's gettext catalogue; "" when it has none."""
    text = i18n.translations(lang).gettext(english)
    return text if text != english else ""


def _asks_for_written_answer(cells, i: int) -> bool:
    """Is cell i the question of a written answer (the next cell is its answer cell)?"""
    if i + 1 >= len(cells):
        return False
    nxt = cells[i + 1]
    return nxt.cell_type == "markdown" and bool(course.nbgrader_meta(nxt).get("solution"))


def setup_text(source: str, lang: str) -> str:
    """A setup cell with its comments and its missing-package messages in `lang`."""
    for en in SETUP:
        text = _translated(en, lang)
        if text:
            source = source.replace(en, text)
    return source


def language_line(lang: str) -> str:
    """The lines a translated setup cell ends with: the self-checks speak `lang` (an older byhand without
    messages in other languages keeps English), and a CJK language's plots use a CJK font."""
    fonts = (  # Chinese, Japanese, Korean plot labels need a CJK font (an older byhand has no fonts)
        "    from byhand import fonts  # the plots' labels: a CJK font when one is installed\n\n"
        "    fonts.use_cjk_font()\n"
        if lang.split("_")[0] in ("zh", "ja", "ko")
        else ""
    )
    return (
        f"try:  # the self-checks speak {lang}\n"
        f"    from byhand import i18n\n\n"
        f"    i18n.language({lang!r})\n"
        f"{fonts}"
        f"except ImportError:\n"
        f"    pass"
    )


def code_path(lesson: str, lang: str) -> Path:
    """The translated comments, docstrings, printed text and plot labels of a lesson's code cells:
    one entry per cell, the whole cell, under `<!-- <cell id> en=<hash of the English cell> -->`.
    Worked examples and demos are matched as in `solutions/`; self-check cells and answer stubs as the
    English student notebook has them (`released_code_cells`). Only that text may differ
    (tests/test_zh_output.py compares the code); a cell whose English changed matches no entry and
    stays English until its translation is redone."""
    return TRANSLATIONS / lang / "code" / f"{lesson}.md"


def code_translations(lesson: str, lang: str) -> dict:
    """{hash of the English cell: its translation} for `lesson` in `lang` (empty when none)."""
    path = code_path(lesson, lang)
    return {e.en: e.text for e in parse(path.read_text(encoding="utf-8"))} if path.exists() else {}


def released_code_cells(lesson: str) -> list:
    """The lesson's code cells as a translation matches them: plain cells as in `solutions/`, graded
    ones (self-checks, answer stubs) as the English student notebook has them (`make release`)."""
    cells = [c for c in course.read_solution(lesson).cells if c.cell_type == "code"]
    released = course.NOTEBOOKS / f"{lesson}.ipynb"
    if released.exists():
        student_cells = {c.get("id"): c for c in nbformat.read(released, as_version=4).cells}
        cells = [student_cells.get(c.get("id"), c) if course.nbgrader_meta(c) else c for c in cells]
    return cells


def stale_code(lesson: str, lang: str) -> list:
    """(cell id, English source now) of each code translation whose English cell changed: no code
    cell has the hash it was written for, so the cell is released in English until it is redone
    (the source is "" when the cell is gone)."""
    path = code_path(lesson, lang)
    if not path.exists():
        return []
    cells = released_code_cells(lesson)
    current = {en_hash(c.source) for c in cells}
    by_id = {c.get("id"): c.source for c in cells}
    return [
        (e.cell, by_id.get(e.cell, ""))
        for e in parse(path.read_text(encoding="utf-8"))
        if e.en not in current
    ]


def rubrics_path(lesson: str, lang: str) -> Path:
    """The translated model answers and rubrics of a lesson's written answers (for formgrader):
    one entry per answer cell, under `<!-- <grade_id> en=<hash of the solution cell> -->`."""
    return TRANSLATIONS / lang / "rubrics" / f"{lesson}.md"


def rubrics(lesson: str, lang: str) -> dict:
    """{grade_id: translated model answer and rubric} for the written answers whose English is
    still the one translated (a changed English answer falls back to the English, and
    tests/test_zh_output.py fails until the translation follows)."""
    path = rubrics_path(lesson, lang)
    if not path.exists():
        return {}
    entries = parse(path.read_text(encoding="utf-8"))
    current = {
        c.metadata.get("nbgrader", {}).get("grade_id"): en_hash(c.source)
        for c in course.manual_cells(course.read_solution(lesson))
    }
    return {e.cell: e.text for e in entries if current.get(e.cell) == e.en}


def update_skeleton(lesson: str, lang: str) -> Path:
    """Rewrite the translation file in notebook order: current entries kept, stale ones kept under
    their new hash with the old text and the new English below a TODO, missing ones added as TODO,
    orphans dropped."""
    by_hash = {e.en: e for e in load(lesson, lang)}
    by_cell = {e.cell: e for e in load(lesson, lang)}
    entries = []
    for cell_id, source in translatable_cells(course.read_solution(lesson)):
        h = en_hash(source)
        if h in by_hash:
            entries.append(Entry(cell_id, h, by_hash[h].text))
        elif cell_id in by_cell:
            old = by_cell[cell_id].text
            entries.append(Entry(cell_id, h, f"{TODO} (the English changed)\n\n{source}\n\n---\n\n{old}"))
        else:
            entries.append(Entry(cell_id, h, f"{TODO}\n\n{source}"))
    path = path_for(lesson, lang)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump(entries), encoding="utf-8")
    return path


def report(lang: str) -> str:
    lines = []
    for lesson in course.lessons():
        st = status(lesson, lang)
        total = len(translatable_cells(course.read_solution(lesson)))
        code = stale_code(lesson, lang)
        lines.append(
            f"{lesson:24s} {total - len(st.missing) - len(st.stale) - len(st.untranslated):3d}/{total} current"
            + (f", {len(st.stale)} stale: {', '.join(c for c, _, _ in st.stale)}" if st.stale else "")
            + (f", {len(st.missing)} missing" if st.missing else "")
            + (f", {len(st.untranslated)} still TODO" if st.untranslated else "")
            + (f", {len(st.orphans)} orphaned" if st.orphans else "")
            + (
                f", {len(code)} code cells stale ({code_path(lesson, lang).name}): {', '.join(c for c, _ in code)}"
                if code
                else ""
            )
        )
    return "\n".join(lines)


def translated_notebooks(lesson: str, notebook: Path, dest: Path) -> list[Path]:
    """The student notebook in every language that has a translation of this lesson."""
    written = []
    for lang in LANGUAGES:
        if path_for(lesson, lang).exists():
            # a translation behind the English is released with its stale note, never blocks
            nb = translate(nbformat.read(notebook, as_version=4), lesson, lang, stale_ok=True)
            out = dest / lang / notebook.name
            out.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, out)
            written.append(out)
    return written
