"""The grader pages' gettext catalogues (student/byhand/locale, `make messages`): every id the code
marks has a translation in every language, with the same named fields; the compiled `.mo` is the
`.po`'s; the wheel carries it; and a page reads its words from it."""

from __future__ import annotations

import re
import shutil
import string
import subprocess
import zipfile

import pytest
from byhand import i18n

from autograder.outcomes import Status
from autograder.tooling import messages, student

LANGS = messages.languages()


def _fields(text: str) -> set:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_there_is_a_chinese_catalogue():
    assert "zh_CN" in LANGS, f"got {LANGS}, expected zh_CN among them"


def test_the_extractor_reads_marks_inside_f_strings_and_constants():
    ids = {m.id for m in messages.template() if m.id}
    # an f-string's call (report.py), a constant (outputs.CUT_NOTE), a plural (report.plural)
    for expected in (
        "Class report",
        "[the grader kept the first {mb} MB of this cell's output; the rest was cut]",
        ("{n} student", "{n} students"),
    ):
        assert expected in ids, f"got no {expected!r} among the {len(ids)} ids"


def test_the_extractor_reads_every_package_of_the_checks_private_ones_too():
    """Babel skips folders named `_*` unless told: the ids of `byhand/_core/` must be found there."""
    template = [m for m in messages.template() if m.id]
    where = {
        loc[0].split("/")[2] for m in template for loc in m.locations if loc[0].startswith("student/byhand/")
    }
    assert "_core" in where, f"got ids from {sorted(where)}, expected byhand/_core among them"
    assert "on input: {label}" in {m.id for m in template}, "got no 'on input: {label}' id"


@pytest.mark.parametrize("lang", LANGS)
def test_every_id_the_code_uses_is_translated(lang):
    missing = messages.untranslated(lang)
    assert not missing, f"ids with no {lang} translation (make messages, then edit the .po): {missing}"


@pytest.mark.parametrize("lang", LANGS)
def test_a_translation_has_the_fields_of_its_id(lang):
    wrong = []
    for m in messages.read(lang):
        if not m.id or not m.string:
            continue
        ids = m.id if isinstance(m.id, tuple) else (m.id,)
        strings = m.string if isinstance(m.string, tuple) else (m.string,)
        for s in strings:
            if _fields(s) != _fields(ids[-1]):
                wrong.append(f"{ids[-1]!r}: got {sorted(_fields(s))}, expected {sorted(_fields(ids[-1]))}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("lang", LANGS)
def test_the_mo_is_the_compiled_po(lang):
    mo = messages.po_path(lang).with_suffix(".mo")
    assert mo.read_bytes() == messages.compiled(lang), f"{mo} is older than its .po: run make messages"


def test_the_po_files_are_as_make_messages_writes_them():
    """A .po edited by hand (or by a tool with other settings) is rewritten the same by
    `make messages`, so a review shows only changed words."""
    for lang in LANGS:
        cat = messages._stable(messages.read(lang))
        assert messages.po_bytes(cat) == messages.po_path(lang).read_bytes(), f"{lang}: run make messages"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="GNU gettext's msgfmt is not installed")
def test_gnu_msgfmt_accepts_the_po(lang, tmp_path):
    """GNU gettext's own checker (headers, plural forms, `python-brace-format` fields) finds nothing
    to say: the catalogue is one any gettext tool reads."""
    done = subprocess.run(
        ["msgfmt", "--check", "-o", str(tmp_path / "x.mo"), str(messages.po_path(lang))],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0 and not done.stderr.strip(), f"got {done.returncode}: {done.stderr}"


def test_pages_speak_the_catalogue():
    assert i18n.page("Class report", "zh_CN") == "全班报告"
    assert i18n.page("{points} / {max_points} points", "zh_CN", points=3, max_points=9) == "3 / 9 分"
    assert i18n.plural(1, "{n} student", "{n} students", "en", n=1) == "1 student"
    assert i18n.plural(2, "{n} student", "{n} students", "en", n=2) == "2 students"
    assert i18n.plural(2, "{n} student", "{n} students", "zh_CN", n=2) == "学生 2 人"
    for status in Status:  # the feedback page's status column
        assert i18n.page(str(status), "zh_CN") != str(status), f"got no Chinese for {status}"


@pytest.mark.parametrize("lang", ["fr", "../zh_CN", "zh_CN/../../x", ""])
def test_a_language_with_no_catalogue_is_english(lang):
    assert i18n.page("Class report", lang or "en") == "Class report"


@pytest.mark.slow  # builds the wheel
def test_the_wheel_carries_the_compiled_catalogues(tmp_path):
    names = zipfile.ZipFile(student.build_wheel(tmp_path)).namelist()
    for lang in LANGS:
        assert f"byhand/locale/{lang}/LC_MESSAGES/byhand.mo" in names, f"got {sorted(names)}"
    assert not [n for n in names if re.search(r"\.pot?$", n)], "the wheel needs only the .mo files"
