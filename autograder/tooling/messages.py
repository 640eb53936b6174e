"""The gettext catalogues of the grader's pages (`make messages`).

The feedback page's and the class report's fixed words are English templates with `{named}`
fields, marked where the code writes them: `_t("...")` (a page's helper), `N_("...")` (a template
kept in a constant or a list) and `plural(n, "{n} student", "{n} students")`. Babel's extractor
reads those marks out of `autograder/` (the template, `byhand.pot`); each language's catalogue is a
standard `.po` file (Poedit, Weblate and any gettext tool edit it) compiled to the `.mo` that
`byhand.i18n.page` reads through the standard library's `gettext`:

    student/byhand/locale/<lang>/LC_MESSAGES/byhand.po   the translator's file (in the repo)
    student/byhand/locale/<lang>/LC_MESSAGES/byhand.mo   compiled by `make messages` (in the wheel)

`make messages` re-extracts, merges new ids into every `.po` (empty, to be translated), marks
the ones the code no longer uses obsolete, and compiles the `.mo` files. A third language is a new
folder with a `.po` copied from `byhand.pot` (`python -m autograder messages --new <lang>`).
tests/test_po_catalogues.py fails on an id with no translation, on fields that differ between an id
and its translation, and on a `.mo` older than its `.po`.
"""

from __future__ import annotations

import ast
import datetime
import io
import os
from pathlib import Path
from types import MappingProxyType

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po
from byhand.i18n import DOMAIN

from autograder import course

LOCALE = course.ROOT / "student" / "byhand" / "locale"
# where the marked ids are: the grader's pages, and the checks' messages (byhand)
SOURCES = (course.ROOT / "autograder", course.ROOT / "student" / "byhand")
# the marks (function name: which arguments are the message; None = the first)
KEYWORDS = MappingProxyType({"_t": None, "N_": None, "msg": None, "plural": (2, 3)})
FIXED_DATE = datetime.datetime(2026, 12, 5, tzinfo=datetime.timezone.utc)
HEADER = "The fixed words of the grader's feedback page and class report (autograder/tooling/messages.py)."


def extract_ast(fileobj, keywords, comment_tags, options):
    """Babel's extraction method over Python's own syntax tree: Babel's tokenizer-based one does not
    look inside f-strings before Python 3.12, and the pages build their HTML in f-strings."""
    tree = ast.parse(fileobj.read().decode("utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if name not in KEYWORDS:
            continue
        # every positional argument, None where it is not a literal (Babel picks the spec's ones,
        # and skips a call whose message is not a literal: it is marked where it is defined)
        args = tuple(
            a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None for a in node.args
        )
        yield node.lineno, name, args, []


def template() -> Catalog:
    """A catalogue of every id the code marks, with where each is used."""
    cat = Catalog(project="transformer-by-hand", domain=DOMAIN, header_comment=f"# {HEADER}", fuzzy=False)
    for source in SOURCES:
        where = source.relative_to(course.ROOT).as_posix()
        found = extract_from_dir(
            str(source),
            method_map=[("**.py", extract_ast)],
            keywords=dict(KEYWORDS),
            # Babel skips folders whose names start with "_" by default; `byhand/_core/` holds messages
            directory_filter=lambda folder: os.path.basename(folder) not in ("__pycache__", ".git"),
        )
        for filename, lineno, message, comments, _context in found:
            cat.add(message, locations=[(f"{where}/{filename}", lineno)], auto_comments=comments)
    return cat


def languages() -> list:
    return sorted(p.name for p in LOCALE.iterdir() if (p / "LC_MESSAGES" / f"{DOMAIN}.po").exists())


def po_path(lang: str) -> Path:
    return LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def read(lang: str) -> Catalog:
    with open(po_path(lang), "rb") as f:
        return read_po(f, locale=lang, domain=DOMAIN)


def po_bytes(cat: Catalog) -> bytes:
    buf = io.BytesIO()
    # no line numbers (a moved line is no change) and no dates: the file changes when its words do
    write_po(buf, cat, width=100, omit_header=False, include_lineno=False, sort_output=False)
    return buf.getvalue()


def mo_bytes(cat: Catalog) -> bytes:
    buf = io.BytesIO()
    write_mo(buf, cat, use_fuzzy=False)
    return buf.getvalue()


def _stable(cat: Catalog) -> Catalog:
    """The header fields gettext needs, without the dates that would change the files at every run."""
    cat.creation_date = cat.revision_date = FIXED_DATE
    cat.fuzzy = False
    return cat


def update(lang: str | None = None, new: bool = False, pot: Catalog | None = None) -> list:
    """Merge the code's ids (`pot`, default: extracted now) into each language's `.po` and compile
    its `.mo`; the files written."""
    pot = pot or template()
    written = []
    for code in [lang] if lang else languages():
        path = po_path(code)
        if new:
            if path.exists():
                raise FileExistsError(f"{path} exists: drop --new to update it")
            path.parent.mkdir(parents=True, exist_ok=True)
            cat = Catalog(locale=code, domain=DOMAIN, project=pot.project, header_comment=pot.header_comment)
        else:
            cat = read(code)
        # a changed English is a new id, never a guess; an id the code no longer uses stays as an
        # obsolete entry (#~), where a translator finds its old translation
        cat.update(pot, no_fuzzy_matching=True)
        cat = _stable(cat)
        for out, data in ((path, po_bytes(cat)), (path.with_suffix(".mo"), mo_bytes(cat))):
            if not out.exists() or out.read_bytes() != data:
                out.write_bytes(data)
                written.append(out)
    pot_path = LOCALE / f"{DOMAIN}.pot"
    data = po_bytes(_stable(pot))
    if not pot_path.exists() or pot_path.read_bytes() != data:
        pot_path.write_bytes(data)
        written.append(pot_path)
    return written


def compiled(lang: str) -> bytes:
    """The `.mo` that the `.po` of `lang` compiles to (what the repo's `.mo` must be)."""
    return mo_bytes(read(lang))


def untranslated(lang: str, pot: Catalog | None = None) -> list:
    """The ids the code uses (`pot`, default: extracted now) that the `.po` of `lang` has no
    translation for (or a fuzzy one)."""
    cat = read(lang)
    used = {m.id for m in (pot or template()) if m.id}
    out = []
    for message in cat:
        if message.id not in used:
            continue
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if message.fuzzy or not all(strings):
            out.append(message.id)
    return out + sorted((i for i in used if i not in cat), key=str)
