"""Totals an instructor can upload (issue 52): which lessons count is the course config's to say, a
late student has one total everywhere, and the LMS files tell a pending lesson from a final one."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from autograder import course
from autograder.collect import lateness
from autograder.outcomes import Graded, Row
from autograder.record import gradebook
from autograder.record.export import export

A, B, K = "01_attention", "02_layernorm", "11_tokenizer"


def _dicts(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _rows(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _graded(student, lesson, points, written="passed"):
    """`points` of the lesson's autograded questions (the first ones), its written answers `written`."""
    rows, left = [], points
    for q, mx in course.questions(lesson).items():
        got = min(mx, left)
        left -= got
        rows.append(Row(student, lesson, q, got, mx, "passed" if got == mx else "failed", ""))
    for q, mx in course.manual_questions(lesson).items():
        rows.append(Row(student, lesson, q, mx if written == "passed" else 0, mx, written, ""))
    return Graded(student, lesson, rows)


def _meta(student, lms, lms_id, **kw):
    return {"student": student, "name": student.split("_")[0], "lms": lms, "lms_id": lms_id, **kw}


def _config(tmp_path, extra=""):
    (tmp_path / "times.csv").write_text("student,lesson,submitted_at\n1111,01_attention,2026-03-02 20:00\n")
    (tmp_path / "course.toml").write_text(
        'deadline = "2026-03-01 23:59"\n' + extra + "[late_policy]\npercent_per_day = 20\n"
        '[lms]\ntimes = "times.csv"\n'
    )
    return lateness.load(tmp_path / "course.toml")


def _class(cfg):
    """late_1111 (Canvas) hands in lesson 01 a day late, 10 autograded points and full written
    answers: 13 before the penalty, 10.4 after; ontime_2222 (Canvas); bo_4502 (Moodle) also hands in
    lesson 11, which only some students do."""
    from autograder.collect.submissions import Submission

    graded = [
        _graded("late_1111", A, 10),
        _graded("ontime_2222", A, 4),
        _graded("ontime_2222", B, 8),
        _graded("bo_4502", A, 10, written="needs grading"),
        _graded("bo_4502", K, 5),
    ]
    subs = [
        Submission("late_1111", A, None, lms="canvas", lms_id="1111", attachment_id="91"),
        Submission("ontime_2222", A, None, lms="canvas", lms_id="2222", attachment_id="92"),
        Submission("ontime_2222", B, None, lms="canvas", lms_id="2222", attachment_id="93"),
        Submission("bo_4502", A, None, lms="moodle", lms_id="4502", name="Bo Lee"),
        Submission("bo_4502", K, None, lms="moodle", lms_id="4502", name="Bo Lee"),
    ]
    subs = lateness.apply_times(subs, cfg)
    return graded, [{**s.meta(), "student": s.student, "lesson": s.lesson} for s in subs]


def _report_cell(page: str, student: str, column: int) -> str:
    row = page.split(f"<tr><td>{student}</td>")[1].split("</tr>")[0]
    cells = [c.split(">", 1)[1] for c in row.split("<td")[1:]]
    import re

    return re.sub(r"<[^>]+>", "", cells[column]).strip()


@pytest.mark.slow  # writes nbgrader's gradebook and every output file: about 2 s of CPU
def test_a_late_student_has_one_total_everywhere(tmp_path):
    """summary.csv, submissions.csv, the report, nbgrader's gradebook (as formgrader and `nbgrader
    export` read it) and every LMS file say the same points for a late student: after the penalty."""
    cfg = _config(tmp_path)
    graded, metas = _class(cfg)
    out = tmp_path / "out"
    out.mkdir()
    db_url = gradebook.default_url(out)
    gradebook.register_lessons(db_url, [A, B, K])
    with gradebook.open_gradebook(db_url) as gb:
        gradebook.record(gb, graded)
    rows = export(out, graded, metas, cfg, db_url=db_url)
    assert rows, "export returns the submissions' rows"
    expected = "10.4"  # 13 points, one started day late at 20% a day
    got = {}
    got["summary.csv"] = next(r["points"] for r in _dicts(out / "summary.csv") if r["student"] == "late_1111")
    got["submissions.csv"] = next(
        r["points_after_penalty"] for r in _dicts(out / "submissions.csv") if r["student"] == "late_1111"
    )
    wide = next(r for r in _dicts(out / "lms" / "grades_wide.csv") if r["student"] == "late_1111")
    got["grades_wide lesson"], got["grades_wide total"] = wide[A], wide["total"]
    canvas = _rows(out / "lms" / "canvas_gradebook.csv")
    line = next(x for x in canvas if x[1] == "1111")
    got["canvas"] = line[canvas[0].index(A)]
    page = (out / "report" / "index.html").read_text(encoding="utf-8")
    got["report lesson"] = _report_cell(page, "late_1111", 0).split("/")[0].strip()
    got["report total"] = _report_cell(page, "late_1111", -1).split("/")[0].strip()
    scores = {r[1]: r[2] for r in _rows(out / "report" / "scores.csv")[1:] if r[0] == A}
    got["report scores.csv"] = scores["late_1111"]
    with gradebook.open_gradebook(db_url) as gb:
        sub = gb.find_submission(A, "late_1111")
        got["gradebook (nbgrader export)"] = f"{max(0.0, sub.score - sub.late_submission_penalty):g}"
    from autograder.record.export import table

    line = next(x for x in table(graded, rows).splitlines() if x.startswith("late_1111"))
    got["make grade's table"] = line.split()[1].split("/")[0]
    wrong = {k: v for k, v in got.items() if v != expected}
    assert not wrong, f"got {wrong}, expected {expected} in each"


@pytest.mark.slow  # writes nbgrader's gradebook and every output file: about 2 s of CPU
def test_the_config_says_which_lessons_count(tmp_path):
    """With `lessons = [...]`, a lesson outside it (bo's lesson 11) is graded and shown to its student,
    and enters nobody's max_total; without it the report says which lessons the totals count."""
    cfg = _config(tmp_path, 'lessons = ["01_attention", "02_layernorm"]\n')
    graded, metas = _class(cfg)
    out = tmp_path / "out"
    out.mkdir()
    export(out, graded, metas, cfg)
    counted = course.max_points(A) + course.max_points(B)
    wide = _dicts(out / "lms" / "grades_wide.csv")
    assert {float(w["max_total"]) for w in wide} == {counted}, (
        f"got {[w['max_total'] for w in wide]}, expected {counted}"
    )
    bo = next(w for w in wide if w["student"] == "bo_4502")
    assert K not in bo and float(bo["total"]) == 10.0, f"got {bo}, expected lesson 11 outside the total"
    assert K in {r["lesson"] for r in _dicts(out / "summary.csv")}, "lesson 11 is still graded"
    assert not (out / "lms" / f"moodle_worksheet_{K}.csv").exists()
    page = (out / "report" / "index.html").read_text(encoding="utf-8")
    assert _report_cell(page, "bo_4502", -1) == f"10 / {counted:g}", _report_cell(page, "bo_4502", -1)
    assert "The totals count 01_attention, 02_layernorm (the course config&#x27;s lessons)" in page, page

    cfg = _config(tmp_path)
    export(out, graded, metas, cfg)
    page = (out / "report" / "index.html").read_text(encoding="utf-8")
    assert f"The totals count {A}, {B}, {K}: every lesson someone handed in" in page
    assert "lessons = [...]" in page


def test_the_lms_files_tell_pending_from_final(tmp_path):
    """bo's lesson 01 has written answers not graded yet: Moodle's worksheet gives no grade for it
    (Moodle would take it as final) and says why; Canvas's file has a status column per lesson
    (read only, so Canvas's import leaves it alone)."""
    cfg = _config(tmp_path)
    graded, metas = _class(cfg)
    graded.append(_graded("wu_3333", A, 7, written="needs grading"))
    metas.append(_meta("wu_3333", "canvas", "3333", lesson=A, attachment_id="94"))
    out = tmp_path / "out"
    out.mkdir()
    export(out, graded, metas, cfg)
    sheet = _dicts(out / "lms" / f"moodle_worksheet_{A}.csv")
    assert [(r["Grade"], "not graded yet" in r["Feedback comments"]) for r in sheet] == [("", True)], sheet
    canvas = _rows(out / "lms" / "canvas_gradebook.csv")
    status = f"{A} status"
    assert status in canvas[0], f"got {canvas[0]}, expected a {status!r} column"
    col = canvas[0].index(status)
    assert canvas[1][col] == "(read only)"
    said = {x[1]: x[col] for x in canvas[2:]}
    assert said["3333"].startswith("pending") and said["1111"] == "final", said


@pytest.mark.slow  # writes nbgrader's gradebook: about 2 s of CPU
def test_formgrader_shows_the_due_dates(tmp_path):
    """nbgrader's gradebook (formgrader's) has each lesson's due date from the course config."""
    from nbgrader.api import Assignment

    cfg = _config(tmp_path, '[deadlines]\n"02_layernorm" = "2026-03-08 23:59"\n')
    graded, metas = _class(cfg)
    out = tmp_path / "out"
    out.mkdir()
    db_url = gradebook.default_url(out)
    gradebook.register_lessons(db_url, [A, B])
    export(out, graded, metas, cfg, db_url=db_url)
    with gradebook.open_gradebook(db_url) as gb:
        got = {a.name: str(a.duedate) for a in gb.db.query(Assignment)}
    assert got == {A: "2026-03-01 23:59:00", B: "2026-03-08 23:59:00"}, got
