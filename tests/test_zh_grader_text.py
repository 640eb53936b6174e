"""What the grader itself writes about a Chinese notebook, in Chinese: where it cut a cell's output,
why it refused a file beside it, why the notebook could not be read; and English where no notebook
was read to know its language (a refused file counts in no class's language)."""

from __future__ import annotations

import json
import os
import re
import stat

import nbformat
import pytest
from byhand.i18n import untranslated
from zh_latin import latin_words

from autograder import course, state
from autograder.collect import tree
from autograder.collect.submissions import Submission, collect
from autograder.judge import grade
from autograder.outcomes import Graded, Row, Status
from autograder.record import folders
from autograder.record.report import class_language
from autograder.run import outputs

LANG = "zh_CN"
LESSON = "02_layernorm"
CJK = re.compile(r"[\u4e00-\u9fff]")


def _text_of(page: str) -> str:
    """What a reader sees of a page: no markup, no style, no code."""
    import html

    page = re.sub(r"<style>.*?</style>|<title>|</title>|<meta[^>]*>", " ", page, flags=re.S)
    page = re.sub(r"<code>.*?</code>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "\n", page))


def _released(lang: str = LANG) -> dict:
    path = (
        course.NOTEBOOKS / lang / f"{LESSON}.ipynb" if lang != "en" else course.NOTEBOOKS / f"{LESSON}.ipynb"
    )
    return json.loads(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------
# where a cell's output was cut


def _flooded() -> nbformat.NotebookNode:
    """A notebook whose outputs carry both cut notes: the kernel's (inside the text) and the grader's
    (an output of its own)."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print('x' * 10**9)")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="xxxx" + outputs.CUT.format(mb=2)),
        nbformat.v4.new_output("stream", name="stdout", text="yy" + outputs.CUT.format(mb=4)),
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("[the grader kept the first 4 MB]"), cell]
    return nb


def test_a_cut_note_speaks_the_notebooks_language():
    """Does a Chinese notebook's cut note say in Chinese how many MB were kept, and an English one
    keep the English note?"""
    nb = _flooded()
    outputs.localize_cut_notes(nb, LANG)
    texts = [o.text for o in nb.cells[1].outputs]
    assert texts[0].startswith("xxxx\n") and texts[1].startswith("yy\n"), texts
    for text, mb in zip(texts, (2, 4), strict=True):
        note = text.strip("xy\n")
        assert CJK.search(note) and f" {mb} MB" in note, f"got {note!r}, expected a Chinese note of {mb} MB"
        assert latin_words(note) == [], f"got English words {latin_words(note)} in {note!r}"
    assert nb.cells[0].source == "[the grader kept the first 4 MB]"  # markdown is the lesson's
    english = _flooded()
    outputs.localize_cut_notes(english, "en")
    assert english.cells[1].outputs == _flooded().cells[1].outputs, "got the English outputs changed"


def test_the_cut_note_found_is_the_one_written():
    """Is the pattern that finds a note the note the cap writes (so a reworded note is still found)?"""
    for mb in (2, 4, 64):
        assert outputs.CUT_FOUND.search(outputs.CUT.format(mb=mb))["mb"] == str(mb)
    assert outputs.CUT_FOUND.search("[the grader kept the first x MB of this cell's output") is None


# ---------------------------------------------------------------------------------------------
# a notebook that could not be read, and the files refused beside one


def _grade_file(tmp_path, data: bytes, name: str = f"{LESSON}.ipynb") -> Graded:
    """What grade_one makes of a file it cannot take as a notebook (it stops before any kernel)."""
    path = tmp_path / name
    path.write_bytes(data)
    return grade.grade_one(Submission("zh_CN-erin", LESSON, path), station=None)


def test_a_chinese_notebook_that_cannot_be_read_is_refused_in_chinese(tmp_path):
    """A zh_CN notebook with a malformed cell: is its grades.csv message and its plain feedback page
    Chinese, and the same file in English English?"""
    for lang in (LANG, "en"):
        nb = _released(lang)
        nb["cells"][3]["source"] = 5  # not text: a malformed cell
        g = _grade_file(tmp_path, json.dumps(nb).encode())
        [row] = g.rows
        assert row.status == Status.UNGRADABLE and g.known_language == lang, (row, g.known_language)
        folders.write_feedback(tmp_path / lang, g)
        page = folders.feedback_page(tmp_path / lang, g).read_text(encoding="utf-8")
        if lang == "en":
            assert row.message == "the notebook has a malformed cell", row.message
            assert "<html lang='en'>" in page and "Nothing of the notebook could be shown" in page
            continue
        assert CJK.search(row.message) and latin_words(row.message) == [], (
            f"got {row.message!r}, expected the reason in Chinese"
        )
        assert "<html lang='zh-CN'>" in page and row.message in page, page[:400]
        assert latin_words(_text_of(page)) == [], f"got English on the page: {latin_words(_text_of(page))}"


def test_a_file_whose_language_nobody_knows_is_refused_in_english(tmp_path):
    """An empty file, or one that is not JSON: English, and no language to count."""
    for data in (b"", b"{not json", json.dumps({"metadata": {"language": LANG}}).encode()):
        g = _grade_file(tmp_path, data)
        [row] = g.rows
        assert row.status == Status.UNGRADABLE
        if data.startswith(b'{"metadata"'):  # JSON that names its language, though not a notebook
            assert g.known_language == LANG and CJK.search(row.message), row.message
        else:
            assert g.known_language == "" and not CJK.search(row.message), (g.known_language, row.message)


def test_every_reason_to_refuse_a_file_is_translated():
    """Each reason tree.py gives for a file it does not read, and each reason a notebook cannot be
    read or run, after its frame, as the code builds it (catalogue ids): Chinese, with no English
    word outside code and OS text."""
    from byhand.i18n import msg

    from autograder.collect import submissions
    from autograder.run import probe

    reasons = [tree._too_big(25 << 20, 20 << 20)]
    reasons += [
        tree._refuse_type(mode)
        for mode in (stat.S_IFLNK, stat.S_IFIFO, stat.S_IFCHR, stat.S_IFBLK, stat.S_IFSOCK, stat.S_IFDIR)
    ]
    from autograder.tooling import messages

    for message in messages.template():  # every other reason, as the code words it
        if any(path.endswith("collect/tree.py") for path, _ in message.locations):
            reasons.append(msg(message.id, **{k: "7" for k in re.findall(r"\{(\w+)\}", message.id)}))
    assert len(reasons) >= 14, reasons
    lines = [submissions._refused("02_layernorm-old.ipynb", r) for r in reasons]

    class _Km:  # a kernel killed by the out-of-memory killer, and one that ended itself
        def __init__(self, code):
            self.provisioner = type("P", (), {"process": type("Q", (), {"poll": lambda _, c=code: c})()})()

    deaths = [probe.death_reason(_Km(-9)), probe.death_reason(_Km(1)), probe.death_reason(_Km(None))]
    deaths.append(msg("the kernel stopped answering (no reply within {s} s, even after an interrupt)", s=120))
    lines += [msg("the notebook could not be run: {why}", why=d) for d in deaths]
    malformed = _released()
    malformed["cells"][3]["source"] = 5
    for data in (b"", b"{}", json.dumps(malformed).encode()):
        path = course.ROOT / "build" / "zh-grader-text.ipynb"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        try:
            lines.append(grade.load(path)[1])
        finally:
            path.unlink()
    for line in lines:
        zh = grade.localized(line, LANG)
        assert CJK.search(zh) and latin_words(zh) == [], f"got {zh!r} for {line!r}, expected Chinese"
        assert not untranslated(line, LANG), untranslated(line, LANG)
    for line in (
        submissions._refused("a.ipynb", msg("could not be read ({error})", error="Permission denied")),
        msg("the file could not be read ({error})", error="x"),
    ):
        zh = grade.localized(line, LANG)
        assert CJK.search(zh) and "Permission denied" in zh or "x" in zh, zh  # the OS's own words stay


def test_files_refused_beside_a_chinese_notebook_are_noted_in_chinese(tmp_path):
    """The collector's note on a graded notebook (a file too large, a link it does not follow):
    each part in Chinese, the file names kept."""
    folder = tmp_path / "class" / "erin"
    folder.mkdir(parents=True)
    (folder / f"{LESSON}.ipynb").write_text(json.dumps(_released()), encoding="utf-8")
    (folder / f"{LESSON}-big.ipynb").write_bytes(b"{" + b" " * (2 << 20) + b"}")
    os.symlink(course.SOLUTIONS / f"{LESSON}.ipynb", folder / f"{LESSON}-copy.ipynb")
    [sub] = collect(tmp_path / "class", course.lessons(), workdir=tmp_path / "staged", max_file_mb=1)
    assert sub.path is not None and sub.note.count("refused: ") == 2, sub.note
    zh = grade.localized_note(sub.note, LANG)
    assert zh.count("已拒收") == 2 and f"{LESSON}-big.ipynb" in zh and f"{LESSON}-copy.ipynb" in zh, zh
    assert latin_words(zh) == [], f"got English words {latin_words(zh)} in {zh!r}"
    assert grade.localized_note(sub.note, "en") == sub.note


@pytest.mark.parametrize("known", [True, False])
def test_a_refused_file_counts_in_no_language(known):
    """Is a class of Chinese notebooks still Chinese with a refused file in it (whose language nobody
    read), after its grades are saved and read back?"""
    zh = Graded("ann", LESSON, [Row("ann", LESSON, "q", 1, 1, Status.PASSED)], lang=LANG)
    refused = Graded("bo", LESSON, [Row("bo", LESSON, "", 0, 5, Status.UNGRADABLE, "refused: x")])
    if known:
        refused.lang = "en"  # a notebook that was read, in English: the class is mixed
    saved = [state.from_json(json.loads(json.dumps(state.to_json(g)))) for g in (zh, refused)]
    assert ("language" in state.to_json(refused)) == known
    assert [g.known_language for g in saved] == [LANG, "en" if known else ""]
    assert class_language(saved) == ("en" if known else LANG)


# ---------------------------------------------------------------------------------------------
# a Chinese notebook's demo cells are skipped at grading, as an English one's are


def _filled(lesson: str, lang: str) -> nbformat.NotebookNode:
    """The released notebook of `lesson` in `lang` with the reference answers in its answer cells."""
    answers = {course.nbgrader_meta(c).get("grade_id"): c.source for c in course.read_solution(lesson).cells}
    folder = course.NOTEBOOKS / lang if lang != "en" else course.NOTEBOOKS
    nb = nbformat.read(folder / f"{lesson}.ipynb", as_version=4)
    for cell in nb.cells:
        if course.nbgrader_meta(cell).get("solution"):
            cell.source = answers[course.nbgrader_meta(cell)["grade_id"]]
    return nb


@pytest.mark.parametrize("lesson", course.lessons())
def test_a_chinese_notebooks_demo_cells_are_skipped_like_an_english_ones(lesson):
    """Does grading leave out the same cells of a Chinese notebook as of the English one (restore's
    demo cells, prune's unread cells), comparing them with the Chinese release (course.lesson_text)?
    Compared with the English solution, its translated cells would all run."""
    from autograder.run import prune, restore

    skipped = {}
    for lang in ("en", LANG):
        source = course.lesson_text(lesson, lang)
        nb, skip, notes = restore.restore(_filled(lesson, lang), source)
        assert not notes, f"{lang}: got notes {notes} for the released notebook"
        skip |= prune.skippable(nb, skip, source, grade._check_names(lesson))
        skipped[lang] = {nb.cells[i]["id"] for i in skip}
    assert skipped[LANG] == skipped["en"], (
        f"got {sorted(skipped['en'] - skipped[LANG])} run in Chinese only, "
        f"{sorted(skipped[LANG] - skipped['en'])} skipped in Chinese only; expected the same cells"
    )
    translated = set(translations_of(lesson))
    if translated & skipped["en"]:  # the comparison the Chinese needs: with the English, they would run
        english_source = course.read_solution(lesson)
        nb, skip, _ = restore.restore(_filled(lesson, LANG), english_source)
        skip |= prune.skippable(nb, skip, english_source, grade._check_names(lesson))
        assert not translated & skipped["en"] & {nb.cells[i]["id"] for i in skip}


def translations_of(lesson: str) -> list:
    """The ids of the code cells whose comments and prints the Chinese edition translates."""
    from autograder.tooling import translations

    code = translations.code_translations(lesson, LANG)
    return [c["id"] for c in course.read_solution(lesson).cells if translations.en_hash(c.source) in code]


def test_the_collectors_notes_are_chinese_on_a_chinese_feedback_page(tmp_path):
    """Every note the collector writes beside a graded Chinese notebook (a renamed file, the other
    files found, the files it refused), after the submission crossed to a grading worker (pickled):
    on the feedback page in Chinese, file names kept; the English note as grades.csv keeps it."""
    import pickle

    from autograder.record import feedback

    folder = tmp_path / "class" / "erin"
    folder.mkdir(parents=True)
    (folder / f"{LESSON} (1).ipynb").write_text(json.dumps(_released()), encoding="utf-8")
    (folder / f"{LESSON} (2).ipynb").write_text(json.dumps(_released()), encoding="utf-8")
    (folder / f"{LESSON}-big.ipynb").write_bytes(b"{" + b" " * (2 << 20) + b"}")
    os.symlink(course.SOLUTIONS / f"{LESSON}.ipynb", folder / f"{LESSON}-copy.ipynb")
    os.symlink(course.SOLUTIONS / f"{LESSON}.ipynb", folder / "notes.ipynb")  # of no known lesson
    [sub] = collect(tmp_path / "class", course.lessons(), workdir=tmp_path / "staged", max_file_mb=1)
    english = str(sub.note)
    for start in ("graded ", "also found ", "refused: "):
        assert start in english, english
    assert english.count("; ") >= 4 and len(sub.notes) == 5, (english, sub.notes)
    sub = pickle.loads(pickle.dumps(sub))  # a pool worker's copy
    assert str(sub.note) == english and json.loads(json.dumps(sub.meta()))["note"] == english
    zh = grade.localized_note(sub.note, LANG)
    row = Row(sub.student, LESSON, "layer_norm", 1, 1, Status.PASSED)
    page = _text_of(feedback.plain_page(sub, [row], [zh], LANG))
    names = re.compile(r"\S*\.ipynb|erin|\(\d\)|\d+(\.\d+)?")
    words = latin_words(names.sub(" ", page))
    assert zh in page and words == [], f"got English words {words} on the page: {zh!r}"
    assert zh.count("已拒收") == 3 and "还找到了" in zh and "评分" in zh, zh
    for name in (f"{LESSON} (1).ipynb", f"{LESSON}-big.ipynb", "notes.ipynb"):
        assert name in zh, (name, zh)
    assert grade.localized_note(sub.note, "en") == english


def test_a_submission_with_nothing_to_grade_says_why_in_the_catalogue():
    """The collector's note on a student with no notebook of a known lesson, on a loose file it
    refused, on two files it refused for one lesson: built from catalogue ids, none left English."""
    from byhand.i18n import N_, Msg

    from autograder.collect import submissions

    device, irregular = N_("is a device, not a file"), N_("is not a regular file")
    entries = [
        tree.Entry(("erin", "essay.docx")),
        tree.Entry(("loose.ipynb",), refused=device),
        tree.Entry(("bo", f"{LESSON}.ipynb"), refused=device),
        tree.Entry(("bo", f"{LESSON}-1.ipynb"), refused=irregular),
    ]
    subs = submissions._classify(entries, course.lessons(), None)
    assert [s.student for s in subs] == ["bo", "erin", "loose.ipynb"], subs
    assert [str(s.note) for s in subs] == [
        f"refused: {LESSON}.ipynb is a device, not a file; {LESSON}-1.ipynb is not a regular file",
        "no notebook of a known lesson found (essay.docx); name it like 01_attention.ipynb",
        "loose.ipynb is a device, not a file",
    ]
    for sub in subs:
        assert isinstance(sub.note, Msg) and not untranslated(sub.note, LANG), untranslated(sub.note, LANG)
        zh = grade.localized_note(sub.note, LANG)
        assert CJK.search(zh) and latin_words(re.sub(r"\S*\.(ipynb|docx)", " ", zh)) == [], zh
