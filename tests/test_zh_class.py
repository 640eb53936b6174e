"""A Chinese example class: the zh_CN student notebooks, filled with the answers of English example
students, graded by the real pipeline, get exactly the English points, with messages in Chinese."""

from __future__ import annotations

import html
import re

import byhand
import nbformat
import pytest
from zh_latin import latin_words

from autograder import course
from examples import answers_for
from examples.build import fill, folder_name

LANG = "zh_CN"
LESSONS = ("02_layernorm", "05_init")
STUDENTS = ("carol", "dave")  # a partial (blank + right) and a mistaken student in each lesson
CJK = re.compile(r"[\u4e00-\u9fff]")
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e-?\d+)?")

pytestmark = pytest.mark.e2e


def _zh(lesson: str, cells: dict) -> nbformat.NotebookNode:
    """The zh_CN student notebook with the same answer cells as `fill(lesson, cells)`."""
    en = {course.nbgrader_meta(c).get("grade_id"): c.source for c in fill(lesson, cells).cells}
    nb = nbformat.read(course.NOTEBOOKS / LANG / f"{lesson}.ipynb", as_version=4)
    assert nb.metadata["language"] == LANG
    for cell in nb.cells:
        gid = course.nbgrader_meta(cell).get("grade_id")
        if course.nbgrader_meta(cell).get("solution"):
            cell.source = en[gid]
    return nb


def zh_label(student: str) -> str:
    return f"{LANG}-{student}"


def add_students(folder):
    """This file's students in the shared class (tests/shared_class.py): carol and dave of the
    example class, in the Chinese notebooks, as `zh_CN-carol` and `zh_CN-dave`."""
    for lesson in LESSONS:
        for student, cells in answers_for(lesson).STUDENTS.items():
            if folder_name(student) in STUDENTS:
                (folder / zh_label(folder_name(student))).mkdir(parents=True, exist_ok=True)
                nbformat.write(
                    _zh(lesson, cells), folder / zh_label(folder_name(student)) / f"{lesson}.ipynb"
                )


@pytest.fixture
def graded(shared_class):
    """{"en": rows, "zh_CN": rows, "out": folder}: rows keyed (student, lesson, question), the
    Chinese ones under their English student's name; the English ones are the example class's."""

    def keyed(rows, rename=lambda s: s):
        return {(rename(r["student"]), r["lesson"], r["question"]): r for r in rows if r["lesson"] in LESSONS}

    return {
        "en": keyed(shared_class.rows(STUDENTS)),
        LANG: keyed(shared_class.rows([zh_label(s) for s in STUDENTS]), lambda s: s[len(LANG) + 1 :]),
        "out": shared_class.out,
    }


def test_chinese_notebooks_get_the_english_points(graded):
    en, zh = graded["en"], graded[LANG]
    assert en.keys() == zh.keys() and len(en) >= 2 * len(STUDENTS)
    assert {k: r["points"] for k, r in zh.items()} == {k: r["points"] for k, r in en.items()}
    assert any(r["points"] == "0" for r in en.values()) and any(r["points"] != "0" for r in en.values())
    for lesson in LESSONS:  # and the points the example class expects
        for student, expected in answers_for(lesson).EXPECTED.items():
            if folder_name(student) in STUDENTS:
                for q, points in expected.items():
                    assert float(zh[(folder_name(student), lesson, q)]["points"]) == points


def test_chinese_messages_follow_the_notebook_language(graded):
    en, zh = graded["en"], graded[LANG]
    # the autograded questions and the written answers (grade.written_rows), one language each
    failed = [k for k, r in en.items() if r["status"] != "passed" and r["message"]]
    assert failed and any(k[2] not in byhand.for_lesson(k[1]).QUESTIONS for k in failed)
    for k in failed:
        assert not CJK.search(en[k]["message"]), k
        assert CJK.search(zh[k]["message"]), (k, zh[k]["message"])
        # the same lines, each with the English one's numbers (both rendered from the same ids)
        assert zh[k]["message"].count("\n") == en[k]["message"].count("\n"), (k, zh[k]["message"])
        lost = [n for n in NUMBER.findall(en[k]["message"]) if n not in zh[k]["message"]]
        assert not lost, (k, lost, zh[k]["message"])
        assert latin_words(zh[k]["message"]) == [], (k, zh[k]["message"])
    pages = {
        p.read_text(encoding="utf-8")
        for s in STUDENTS
        for p in (graded["out"] / "feedback" / zh_label(s)).rglob("*.html")
    }
    first = zh[failed[0]]["message"].splitlines()[0]
    assert any(html.escape(first) in page for page in pages), first


def test_chinese_feedback_pages_say_no_english(graded):
    """Is what the grader writes on a Chinese student's feedback page (points, the questions' table
    with its messages, the notes) Chinese, outside code, and the page marked zh-CN?"""
    pages = [p for s in STUDENTS for p in (graded["out"] / "feedback" / zh_label(s)).rglob("*.html")]
    assert len(pages) == len(STUDENTS) * len(LESSONS), pages
    for path in pages:
        page = path.read_text(encoding="utf-8")
        assert "<html lang='zh-CN'>" in page, f"{path.name}: got {page[:80]!r}"
        summary = re.search(r"<div class='tbb-summary'>(.*?)</div>", page, re.S)
        assert summary and CJK.search(summary.group(1)), f"{path.name}: no Chinese summary"
        text = re.sub(r"<code>.*?</code>", " ", summary.group(1), flags=re.S)
        words = latin_words(html.unescape(re.sub(r"<[^>]+>", "\n", text)))
        assert words == [], f"{path.parent.name}/{path.name}: got English words {words} in the summary"
