"""Does a translation follow its English source: current when it matches, stale when the English
changed, and never a second copy of the code?"""

import pytest

from autograder import course
from autograder.tooling import translations

LESSON = "01_attention"


@pytest.fixture
def tdir(tmp_path, monkeypatch):
    monkeypatch.setattr(translations, "TRANSLATIONS", tmp_path)
    return tmp_path


def _translate_all(lang="zh_CN"):
    """Fill every TODO skeleton entry with a stand-in translation (tagged text of the English)."""
    path = translations.update_skeleton(LESSON, lang)
    entries = [
        translations.Entry(e.cell, e.en, f"【译】{e.cell}")
        for e in translations.parse(path.read_text("utf-8"))
    ]
    path.write_text(translations.dump(entries), encoding="utf-8")
    return entries


def test_skeleton_is_not_a_translation(tdir):
    """Does a fresh skeleton count as untranslated, so an English copy can never pass as done?"""
    translations.update_skeleton(LESSON, "zh_CN")
    st = translations.status(LESSON, "zh_CN")
    cells = translations.translatable_cells(course.read_solution(LESSON))
    assert not st.current and len(st.untranslated) == len(cells) and not st.missing


def test_complete_translation_is_current_and_replaces_only_text(tdir):
    """With every cell translated, does translate() change the markdown and nothing else?"""
    _translate_all()
    assert translations.status(LESSON, "zh_CN").current
    nb = course.read_solution(LESSON)
    out = translations.translate(nb, LESSON, "zh_CN")
    assert out.metadata["language"] == "zh_CN"
    for a, b in zip(nb.cells, out.cells, strict=True):
        assert a["id"] == b["id"] and a.metadata == b.metadata
        if a.cell_type == "code" and "setup" in (a.metadata.get("tags") or []):
            assert b.source == translations.setup_text(
                a.source.rstrip("\n") + "\n" + translations.language_line("zh_CN"), "zh_CN"
            )
        elif a.cell_type == "code":
            assert a.source == b.source
        elif not course.nbgrader_meta(a).get("solution"):
            assert b.source.split("\n\n")[0] == f"【译】{a['id']}"


def test_changed_english_makes_its_translation_stale(tdir):
    """When a cell's English changes (its hash no longer matches), is exactly that cell stale?"""
    entries = _translate_all()
    forged = [translations.Entry(e.cell, "0" * 12, e.text) if i == 2 else e for i, e in enumerate(entries)]
    translations.path_for(LESSON, "zh_CN").write_text(translations.dump(forged), encoding="utf-8")
    st = translations.status(LESSON, "zh_CN")
    assert [c for c, _, _ in st.stale] == [entries[2].cell] and not st.orphans
    with pytest.raises(ValueError, match="1 stale"):
        translations.translate(course.read_solution(LESSON), LESSON, "zh_CN")
    translations.update_skeleton(LESSON, "zh_CN")  # keeps the old text for the translator, under a TODO
    st = translations.status(LESSON, "zh_CN")
    assert st.untranslated == [entries[2].cell] and not st.stale


def test_a_missing_cell_and_an_orphan_are_reported(tdir):
    """Is a cell with no entry missing, and an entry for no cell an orphan?"""
    entries = _translate_all()
    kept = entries[1:] + [translations.Entry("gone", "f" * 12, "旧")]
    translations.path_for(LESSON, "zh_CN").write_text(translations.dump(kept), encoding="utf-8")
    st = translations.status(LESSON, "zh_CN")
    assert [c for c, _ in st.missing] == [entries[0].cell] and [e.cell for e in st.orphans] == ["gone"]


@pytest.mark.parametrize("lang", list(translations.LANGUAGES))
@pytest.mark.parametrize("lesson", course.lessons())
def test_translation_is_current(lesson, lang):
    """Is every text cell of the lesson translated, from its current English, with nothing left over?"""
    if not translations.path_for(lesson, lang).exists():
        pytest.skip(f"translations/{lang}/{lesson}.md not written yet")
    st = translations.status(lesson, lang)
    assert st.current, (
        f"{lang}/{lesson}: stale {[c for c, _, _ in st.stale]}, missing {[c for c, _ in st.missing]}, "
        f"still TODO {st.untranslated}, orphaned {[e.cell for e in st.orphans]}: "
        f"run `python -m autograder translations --update` and translate the TODO entries"
    )


def test_a_code_translation_whose_english_changed_is_listed_stale(tdir):
    """Does `python -m autograder translations` name a code cell whose English changed under its
    translation (its entry's hash matches no code cell), and only that one?"""
    cells = [
        c
        for c in course.read_solution(LESSON).cells
        if c.cell_type == "code" and not course.nbgrader_meta(c) and "#" in c.source
    ]
    current = translations.Entry(cells[0]["id"], translations.en_hash(cells[0].source), cells[0].source)
    changed = translations.Entry(cells[1]["id"], "0" * 12, cells[1].source)
    path = translations.code_path(LESSON, "zh_CN")
    path.parent.mkdir(parents=True)
    path.write_text(translations.dump([current, changed]), encoding="utf-8")
    assert translations.stale_code(LESSON, "zh_CN") == [(cells[1]["id"], cells[1].source)]
    line = next(li for li in translations.report("zh_CN").splitlines() if li.startswith(LESSON))
    assert f"1 code cells stale ({LESSON}.md): {cells[1]['id']}" in line, line
    assert not any("code cells stale" in li for li in translations.report("zh_CN").splitlines()[1:])


def test_an_english_only_change_releases_a_chinese_edition_that_flags_itself_stale(tmp_path, monkeypatch):
    """An English-only class adds a text cell to a lesson: `make release` must not stop for the
    missing translation; the Chinese notebook keeps every current translation, shows the new text in
    English, and says at the top, in Chinese, that it is behind."""
    import shutil

    import nbformat

    from autograder import course
    from autograder.tooling import release, translations

    lesson = "02_layernorm"
    solutions = tmp_path / "solutions"
    shutil.copytree(course.SOLUTIONS, solutions)
    nb = nbformat.read(solutions / f"{lesson}.ipynb", as_version=4)
    added = nbformat.v4.new_markdown_cell("A new paragraph the instructor added for this term.")
    added["id"] = "added-this-term"
    nb.cells.insert(3, added)
    nbformat.write(nb, solutions / f"{lesson}.ipynb")
    monkeypatch.setattr(course, "SOLUTIONS", solutions)
    student = nbformat.read(course.NOTEBOOKS / f"{lesson}.ipynb", as_version=4)
    student.cells.insert(3, added)
    path = tmp_path / f"{lesson}.ipynb"
    nbformat.write(student, path)
    with pytest.raises(ValueError, match="not current"):
        translations.translate(student, lesson, "zh_CN")
    (written,) = release._translated(lesson, path, tmp_path / "out")
    zh = nbformat.read(written, as_version=4)
    assert zh.cells[1]["id"] == translations.STALE_NOTE_ID and "落后于英文版" in zh.cells[1].source
    assert "1 处" in zh.cells[1].source
    assert any(c.source == added.source for c in zh.cells), "the new text is released in English"
    current = nbformat.read(course.NOTEBOOKS / "zh_CN" / f"{lesson}.ipynb", as_version=4)
    kept = {c.source for c in current.cells if c.cell_type == "markdown"}
    assert sum(c.source in kept for c in zh.cells if c.cell_type == "markdown") >= len(kept) - 1
