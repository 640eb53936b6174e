"""The smaller surprises of issue 52: an empty notebook, a hand grade set aside, the config's keys
in the docs, formgrader's due dates."""

from __future__ import annotations

import csv
import json

import nbformat

from autograder import course
from autograder.classroom import grade_class
from autograder.collect import lateness
from autograder.outcomes import Graded, Row
from autograder.record.export import export

LESSON = "01_attention"


def test_a_notebook_with_no_cells_could_not_be_graded(tmp_path):
    """Not "an older version of this lesson": an empty notebook is ungradable, said so, and listed
    under the report's "Could not be graded"."""
    (tmp_path / "class" / "empty").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "class" / "empty" / f"{LESSON}.ipynb")
    out = tmp_path / "out"
    grade_class(tmp_path / "class", out, workers=1, quiet=True)
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    got = [(r["status"], r["message"]) for r in rows]
    assert len(rows) == 1 and rows[0]["status"] == "ungradable", f"got {got}, expected one ungradable row"
    assert "no cells" in rows[0]["message"] and "older version" not in rows[0]["message"], got
    report = (out / "report" / "index.html").read_text(encoding="utf-8")
    assert "Could not be graded" in report and "empty" in report.split("Could not be graded")[1]


def test_a_hand_grade_set_aside_is_in_the_report(tmp_path):
    out = tmp_path / "out"
    (out / ".state" / "hand").mkdir(parents=True)
    (out / ".state" / "hand" / "history.json").write_text(
        json.dumps(
            [
                {
                    "student": "ann",
                    "lesson": LESSON,
                    "question": "written_sqrt_dk",
                    "manual_score": 2.0,
                    "comments": {},
                    "set_aside_at": "2026-03-04T10:00:00+00:00",
                    "why": "the answer changed after it was graded by hand",
                }
            ]
        )
    )
    rows = [Row("ann", LESSON, q, 0, mx, "failed", "") for q, mx in course.questions(LESSON).items()]
    export(out, [Graded("ann", LESSON, rows)], [{"student": "ann"}])
    report = (out / "report" / "index.html").read_text(encoding="utf-8")
    assert "Hand grades set aside" in report, "expected the set-aside hand grade announced in the report"
    section = report.split("Hand grades set aside")[1]
    assert "ann" in section and "written_sqrt_dk" in section and "hand_grades_set_aside.csv" in section


def test_the_docs_name_every_key_of_the_course_config():
    """`[lms.columns]` was documented only in a docstring: every key the config takes is in
    docs/grading.md."""
    docs = (course.ROOT / "docs" / "grading.md").read_text(encoding="utf-8")
    missing = []
    for key, sub in lateness.SCHEMA.items():
        if f"{key} =" not in docs and f"[{key}]" not in docs:
            missing.append(key)
        for inner in sub or {}:
            if f"{inner} =" not in docs and f"[{key}.{inner}]" not in docs:
                missing.append(f"{key}.{inner}")
    assert not missing, f"got no mention of {missing} in docs/grading.md, expected every key"


def test_the_new_words_speak_chinese_in_a_chinese_class(tmp_path):
    """A Chinese class's report with lessons outside the total, a stopped cell and a hand grade set
    aside has no English words; the feedback page's new notes are Chinese too."""
    import dataclasses
    import html
    import re

    from byhand import i18n
    from zh_latin import latin_words

    from autograder.judge import grade
    from autograder.record.report import write_report

    def text_of(page):
        page = re.sub(r"<style>.*?</style>|<title>|</title>|<meta[^>]*>", " ", page, flags=re.S)
        page = re.sub(r"<code>.*?</code>", " ", page, flags=re.S)
        return html.unescape(re.sub(r"<[^>]+>", "\n", page))

    out = tmp_path / "out"
    (out / ".state" / "hand").mkdir(parents=True)
    (out / ".state" / "hand" / "history.json").write_text(
        json.dumps(
            [
                {
                    "student": "zh_CN-ann",
                    "lesson": LESSON,
                    "question": "q",
                    "manual_score": 1,
                    "set_aside_at": "t",
                }
            ]
        )
    )
    rows = [Row("zh_CN-ann", LESSON, q, 0, mx, "failed", "") for q, mx in course.questions(LESSON).items()]
    g = dataclasses.replace(Graded("zh_CN-ann", LESSON, rows), lang="zh_CN", stopped=[[23, 60]])
    other = dataclasses.replace(Graded("zh_CN-ann", "02_layernorm", []), lang="zh_CN")
    for counted, chosen in ((None, False), ([LESSON], True)):
        page = write_report(out, [g, other], counted=counted, chosen=chosen).read_text(encoding="utf-8")
        words = latin_words(text_of(page))
        assert words == [], f"got English {words} in the Chinese report (counted={counted})"
    for note in (
        i18n.msg(grade.STOPPED_CELL, cell=23, s=60),
        i18n.msg(grade.STOPPED_ROW, s=60),
        i18n.msg(grade.EMPTY_NOTEBOOK),
    ):
        zh = grade.localized_note(note, "zh_CN")
        assert zh != str(note) and latin_words(zh) == [], f"got {zh!r}, expected Chinese"
