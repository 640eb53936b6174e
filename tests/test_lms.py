"""Lateness (deadlines, extensions, late policy from a TOML file) and the LMS round trip exports
(wide CSV, Canvas gradebook import, Moodle worksheet and gradebook import, feedback zips)."""

import csv
import dataclasses
import zipfile
from pathlib import Path

import pytest

from autograder import course
from autograder.collect import lateness
from autograder.outcomes import CONTRACT_COLUMNS, Graded, Row, safe_name
from autograder.record import gradebook
from autograder.record.export import SUMMARY_COLUMNS, export
from autograder.record.feedback import SCORES_BEGIN, SCORES_END
from autograder.state import course_config as _course_config

CONFIG = """
timezone = "UTC"
deadline = "2026-03-01 23:59"
[deadlines]
"02_layernorm" = "2026-03-08 23:59"
[extensions]
"smithjane_1111" = "2026-03-03 23:59"
"4502/01_attention" = 2
[late_policy]
percent_per_day = 10
max_percent = 25
grace_minutes = 15
[lms]
roster = "roster.csv"
[lms.columns]
"01_attention" = "Lesson 1: Attention (12345)"
"""


def _rows(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _dicts(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def cfg(tmp_path):
    (tmp_path / "course.toml").write_text(CONFIG)
    (tmp_path / "roster.csv").write_text(
        "lms,lms_id,student,email,id_number\nmoodle,4502,,bo.lee@example.edu,S4502\n"
    )
    return lateness.load(tmp_path / "course.toml")


def meta(**kw):
    base = {
        "student": "x",
        "lms_id": "",
        "name": "",
        "submitted_at": "",
        "time_source": "",
        "lms_late": False,
    }
    return {**base, **kw}


@pytest.mark.parametrize(
    "m, lesson, late, penalty, hours",
    [
        (meta(submitted_at="2026-03-01T23:00:00", time_source="lms"), "01_attention", "no", "0", "0.00"),
        (
            meta(submitted_at="2026-03-02T00:10:00", time_source="lms"),
            "01_attention",
            "no",
            "0",
            "0.18",
        ),  # grace
        (meta(submitted_at="2026-03-02T10:00:00", time_source="lms"), "01_attention", "yes", "10", "10.02"),
        (
            meta(submitted_at="2026-03-04T00:30:00", time_source="lms"),
            "01_attention",
            "yes",
            "25",
            "48.52",
        ),  # cap
        (meta(submitted_at="2026-03-02T10:00:00", time_source="lms"), "02_layernorm", "no", "0", "0.00"),
        (
            meta(student="smithjane_1111", submitted_at="2026-03-03T12:00:00", time_source="lms"),
            "01_attention",
            "no",
            "0",
            "0.00",
        ),
        (
            meta(lms_id="4502", submitted_at="2026-03-03T12:00:00", time_source="lms"),
            "01_attention",
            "no",
            "0",
            "0.00",
        ),
        (
            meta(lms_id="4502", submitted_at="2026-03-03T12:00:00", time_source="lms"),
            "02_layernorm",
            "no",
            "0",
            "0.00",
        ),
        (
            meta(submitted_at="2026-03-05T12:00:00+00:00", time_source="file mtime"),
            "01_attention",
            "",
            "0",
            "",
        ),  # a file's time: noted, neither late nor penalised
        (meta(lms_late=True), "01_attention", "yes (LMS)", "10", ""),
        # Canvas marks late against its own due date; the time and the extension say on time (issue 52)
        (
            meta(
                student="smithjane_1111", lms_late=True, submitted_at="2026-03-03T12:00:00", time_source="lms"
            ),
            "01_attention",
            "no",
            "0",
            "0.00",
        ),
    ],
)
def test_lateness_from_the_course_config(cfg, m, lesson, late, penalty, hours):
    """Per-lesson deadlines, grace, per-day percent with a cap, extensions by label or LMS id (and
    per lesson), an untrusted mtime shown but not penalised, Canvas's marker with no time: one day."""
    got = lateness.assess(cfg, m, lesson)
    assert (got["late"], got["penalty_percent"], got["late_by_hours"]) == (late, penalty, hours), got


def test_trusted_mtime_and_bad_configs(tmp_path):
    """With trust_mtime, a late mtime is penalised; a malformed config is a clear error."""
    cfg = lateness.parse(
        "deadline = 2026-03-01T23:59:00Z\n[late_policy]\npercent_per_day = 5\ntrust_mtime = true\n"
    )
    got = lateness.assess(
        cfg, meta(submitted_at="2026-03-03T00:00:00+00:00", time_source="file mtime"), "01_x"
    )
    assert got["penalty_percent"] == "10", got
    for bad, words in [
        ("deadline = 'soon'", "not a date"),
        ("colour = 1", "unknown key"),
        ("timezone = 'Mars/Olympus'", "unknown timezone"),
        ("[late_policy]\npercent_per_day = 300", "between 0 and 100"),
    ]:
        with pytest.raises(lateness.ConfigError, match=words):
            lateness.parse(bad)


def test_the_config_is_kept_for_later_partial_regrades(tmp_path, cfg):
    """Given once, is the course config saved in OUT/.state and used when a regrade omits it?"""
    state = tmp_path / "out" / ".state"
    state.mkdir(parents=True)
    assert _course_config(state, None) is None
    first = _course_config(state, tmp_path / "course.toml")
    again = _course_config(state, None)
    assert again.deadline == first.deadline and again.roster == tmp_path / "roster.csv"


def _graded(student, lesson, points, max_points, status="failed"):
    return Graded(student, lesson, [Row(student, lesson, "q1", points, max_points, status, "")])


def test_exports_for_canvas_moodle_and_the_contract(tmp_path, cfg):
    """From a graded class (Canvas, Moodle, Blackboard, folder students): are grades.csv and
    summary.csv exactly the contract's columns, and do students.csv, submissions.csv, the wide CSV,
    Canvas's and Moodle's import files and the feedback zips hold the right people, ids, points after
    the penalty and file names?"""
    out = tmp_path / "out"
    out.mkdir()
    graded = [
        _graded("Bo Lee_4502", "01_attention", 10, 10, "passed"),
        _graded("alice", "01_attention", 4, 10),
        _graded("jsmith", "01_attention", 10, 10, "passed"),
        _graded("smithjane_1111", "01_attention", 10, 10, "passed"),
        _graded("smithjane_1111", "02_layernorm", 6, 8),
        _graded("smithjane_2222", "01_attention", 8, 10),
    ]
    metas = [
        meta(
            student="Bo Lee_4502", name="Bo Lee", lms="moodle", lms_id="4502", submitted_at="", time_source=""
        ),
        meta(student="alice"),
        meta(
            student="jsmith",
            name="Jane Smith",
            lms="blackboard",
            lms_id="jsmith",
            submitted_at="2026-03-02T10:00:00",
            time_source="lms",
        ),
        meta(student="smithjane_1111", name="smithjane", lms="canvas", lms_id="1111", attachment_id="9001"),
        meta(student="smithjane_1111", name="smithjane", lms="canvas", lms_id="1111", attachment_id="9003"),
        meta(
            student="smithjane_2222",
            name="smithjane",
            lms="canvas",
            lms_id="2222",
            attachment_id="9002",
            lms_late=True,
        ),
    ]
    for g in graded:
        page = out / "feedback" / safe_name(g.student) / f"{g.lesson}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f"<html><body>{g.student} {g.lesson}</body></html>")
    export(out, graded, metas, cfg)

    assert _rows(out / "grades.csv")[0] == list(CONTRACT_COLUMNS)
    assert _rows(out / "summary.csv")[0] == list(SUMMARY_COLUMNS)
    assert [r["points"] for r in _dicts(out / "summary.csv")] == [
        "10",
        "4",
        "9",
        "10",
        "6",
        "7.2",
    ]  # after the penalty: one total everywhere (issue 52)
    assert [(r["student"], r["lms_id"]) for r in _dicts(out / "students.csv")] == [
        ("Bo Lee_4502", "4502"),
        ("alice", ""),
        ("jsmith", "jsmith"),
        ("smithjane_1111", "1111"),
        ("smithjane_2222", "2222"),
    ]
    subs = {(r["student"], r["lesson"]): r for r in _dicts(out / "submissions.csv")}
    js = subs[("jsmith", "01_attention")]
    assert (js["late"], js["penalty_percent"], js["points_after_penalty"]) == ("yes", "10", "9")
    sj2 = subs[("smithjane_2222", "01_attention")]
    assert (sj2["late"], sj2["penalty_percent"], sj2["points_after_penalty"]) == ("yes (LMS)", "10", "7.2")

    wide = {r["student"]: r for r in _dicts(out / "lms" / "grades_wide.csv")}
    assert (wide["smithjane_1111"]["01_attention"], wide["smithjane_1111"]["02_layernorm"]) == ("10", "6")
    # every question of both lessons (written answers too), for every student alike
    assert (wide["smithjane_1111"]["total"], wide["smithjane_1111"]["max_total"]) == ("16", "23")
    assert {w["max_total"] for w in wide.values()} == {"23"}
    assert wide["alice"]["02_layernorm"] == ""  # not submitted: empty, not 0
    assert wide["Bo Lee_4502"]["email"] == "bo.lee@example.edu"

    canvas = _rows(out / "lms" / "canvas_gradebook.csv")
    assert canvas[0] == [
        "Student",
        "ID",
        "SIS User ID",
        "SIS Login ID",
        "Section",
        "Lesson 1: Attention (12345)",
        "02_layernorm",
        "Final Points",
        "Lesson 1: Attention (12345) status",
        "02_layernorm status",
    ]
    assert canvas[1][0] == "Points Possible" and canvas[1][5:7] == ["13", "10"]
    assert [r[:2] + r[5:] for r in canvas[2:]] == [
        ["smithjane", "1111", "10", "6", "16", "final", "final"],
        ["smithjane", "2222", "7.2", "", "7.2", "final", ""],
    ]
    sheet = _dicts(out / "lms" / "moodle_worksheet_01_attention.csv")
    assert [(r["Identifier"], r["Grade"], r["Maximum Grade"]) for r in sheet] == [
        ("Participant 4502", "10", "13")
    ]
    assert {"Identifier", "Grade", "Last modified (grade)", "Feedback comments"} <= set(sheet[0])
    moodle = _dicts(out / "lms" / "moodle_grades.csv")
    assert [(r["First name"], r["Last name"], r["Email address"], r["ID number"]) for r in moodle] == [
        ("Bo", "Lee", "bo.lee@example.edu", "S4502")
    ]
    with zipfile.ZipFile(out / "lms" / "canvas_feedback_01_attention.zip") as zf:
        names = sorted(zf.namelist())
        assert names == [
            "smithjane_1111_9001_feedback_01_attention.html",
            "smithjane_2222_9002_feedback_01_attention.html",
        ]
        assert b"smithjane_2222 01_attention" in zf.read(names[1])
        # what Canvas's re-upload reads: the first two all-digit "_" fields are user and attachment id
        assert [[p for p in n.split("_") if p.isdigit()][:2] for n in names] == [
            ["1111", "9001"],
            ["2222", "9002"],
        ]
    with zipfile.ZipFile(out / "lms" / "moodle_feedback_01_attention.zip") as zf:
        (name,) = zf.namelist()
        # what Moodle's feedback zip importer reads: name, participant id, plugin type, plugin, file
        assert name.split("_", 4) == ["Bo Lee", "4502", "assignfeedback", "file", "01_attention.html"]
    with zipfile.ZipFile(out / "lms" / "canvas_feedback_02_layernorm.zip") as zf:
        assert zf.namelist() == ["smithjane_1111_9003_feedback_02_layernorm.html"]


def _full_rows(student, lesson, autograded_ok=True):
    """A lesson's rows as the judge writes them: every autograded question, every written answer
    waiting for a person."""
    rows = [
        Row(student, lesson, q, mx if autograded_ok else 0, mx, "passed" if autograded_ok else "failed")
        for q, mx in course.questions(lesson).items()
    ]
    rows += [
        Row(student, lesson, q, 0, mx, "needs grading") for q, mx in course.manual_questions(lesson).items()
    ]
    return Graded(student, lesson, rows)


def test_maxima_hold_every_question_for_every_student_and_nobody_exceeds_them(tmp_path):
    """The trial's class: a Canvas student with both lessons and every written answer graded full by
    hand, one with one lesson, one whose notebook was ungradable, a Moodle student. Points possible
    (Canvas), the Moodle maximum, summary.csv, grades_wide's max_total and the report's totals hold
    every question, autograded and written, the same for everyone; nobody is over 100%."""
    out = tmp_path / "out"
    out.mkdir()
    a, b = "01_attention", "02_layernorm"
    graded = [
        _full_rows("full_1", a),
        _full_rows("full_1", b),
        _full_rows("half_2", a, autograded_ok=False),
        Graded("broken_3", b, [Row("broken_3", b, "", 0, course.max_points(b), "ungradable", "not JSON")]),
        _full_rows("Bo Lee_4502", a),
    ]
    metas = [
        meta(student="full_1", name="full", lms="canvas", lms_id="1", attachment_id="11"),
        meta(student="full_1", name="full", lms="canvas", lms_id="1", attachment_id="12"),
        meta(student="half_2", name="half", lms="canvas", lms_id="2", attachment_id="21"),
        meta(student="broken_3", name="broken", lms="canvas", lms_id="3", attachment_id="31"),
        meta(student="Bo Lee_4502", name="Bo Lee", lms="moodle", lms_id="4502"),
    ]
    hand = {
        (g.student, g.lesson): {
            "scores": {q: (mx, 0.0) for q, mx in course.manual_questions(g.lesson).items()},
            "comments": {},
        }
        for g in graded
        if g.student in ("full_1", "Bo Lee_4502")
    }
    graded = gradebook.overlay(graded, hand)
    export(out, graded, metas, None)
    full = {a: course.max_points(a), b: course.max_points(b)}
    assert full == {a: 13, b: 10}, f"got {full}, expected the autograded and written points of each lesson"

    summary = {(r["student"], r["lesson"]): r for r in _dicts(out / "summary.csv")}
    for (student, lesson), r in summary.items():
        assert float(r["max_points"]) == full[lesson], f"{student}/{lesson}: got max {r['max_points']}"
        assert float(r["points"]) <= float(r["max_points"]), f"{student}/{lesson} is over 100%: {r}"
    assert summary[("full_1", a)]["points"] == "13"

    canvas = _rows(out / "lms" / "canvas_gradebook.csv")
    possible = dict(zip(canvas[0][5:7], map(float, canvas[1][5:7])))
    assert possible == full, f"got Points Possible {possible}, expected {full}"
    for line in canvas[2:]:
        for lesson, value in zip(canvas[0][5:7], line[5:7]):
            assert value == "" or float(value) <= possible[lesson], f"{line[0]} over 100% in {lesson}"
    sheet = _dicts(out / "lms" / "moodle_worksheet_01_attention.csv")
    assert [(r["Grade"], r["Maximum Grade"]) for r in sheet] == [("13", "13")]

    wide = _dicts(out / "lms" / "grades_wide.csv")
    assert {w["max_total"] for w in wide} == {"23"}, "max_total must be the same for every student"
    assert all(float(w["total"]) <= 23 for w in wide)

    page = (out / "report" / "index.html").read_text()
    for student, total in (("full_1", "23 / 23"), ("half_2", "0 / 23"), ("broken_3", "0 / 23")):
        assert (
            f"<tr><td>{student}</td>" in page
            and total in page.split(f"<tr><td>{student}</td>")[1].split("</tr>")[0]
        )


def test_lateness_from_the_lms_s_times_reaches_the_student(tmp_path):
    """The trial's Canvas export: `_LATE_` files, no time in the names, file times from copying.
    With the LMS's submission times given (`[lms] times`), is a `_LATE_` file charged its real days
    (not always one), a file with no known time one day with a note, and an on-time file with a late
    copy time not late at all; and do summary.csv, the student's feedback page (in their language)
    and the report say so, only for the late rows?"""
    (tmp_path / "times.csv").write_text(
        "student,lesson,submitted_at\n3333,01_attention,2026-03-04 08:00\n4444,01_attention,2026-03-01 20:00\n"
    )
    (tmp_path / "course.toml").write_text(
        'deadline = "2026-03-01 23:59"\n[late_policy]\npercent_per_day = 10\nmax_percent = 50\n'
        '[lms]\ntimes = "times.csv"\n'
    )
    cfg = lateness.load(tmp_path / "course.toml")
    from autograder.collect.submissions import Submission

    subs = [
        Submission("doejohn_3333", "01_attention", None, lms="canvas", lms_id="3333", lms_late=True),
        Submission("leebo_4444", "01_attention", None, lms="canvas", lms_id="4444"),
        Submission("wuann_5555", "01_attention", None, lms="canvas", lms_id="5555", lms_late=True),
        Submission(
            "kimpark_6666",
            "01_attention",
            None,
            lms="canvas",
            lms_id="6666",
            submitted_at="2026-03-06T10:00:00+00:00",  # a copy's mtime, days late
            time_source="file mtime",
        ),
    ]
    subs = lateness.apply_times(subs, cfg)
    assert [(s.submitted_at, s.time_source) for s in subs[:2]] == [
        ("2026-03-04T08:00:00+00:00", "lms"),
        ("2026-03-01T20:00:00+00:00", "lms"),
    ]
    out = tmp_path / "out"
    out.mkdir()
    graded = [dataclasses.replace(_graded(s.student, s.lesson, 10, 10, "passed"), lang="en") for s in subs]
    graded[2] = dataclasses.replace(graded[2], lang="zh_CN")  # the class report stays English
    for g in graded:
        page = out / "feedback" / safe_name(g.student) / f"{g.lesson}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(
            f"<html lang='en'><body>{SCORES_BEGIN}10 / 13{SCORES_END}<p>notebook</p></body></html>"
        )
    export(out, graded, [{**s.meta(), "student": s.student} for s in subs], cfg)
    summary = {r["student"]: r for r in _dicts(out / "submissions.csv") if r["lesson"] == "01_attention"}
    got = {k: (r["late"], r["penalty_percent"], r["points_after_penalty"]) for k, r in summary.items()}
    assert list(_dicts(out / "summary.csv")[0]) == ["student", "lesson", "points", "max_points", "status"]
    assert got == {
        "doejohn_3333": ("yes (LMS)", "30", "7"),  # 2 days 8 hours: three started days
        "leebo_4444": ("no", "0", "10"),
        "wuann_5555": ("yes (LMS)", "10", "9"),  # no time known: one day, said so
        "kimpark_6666": ("", "0", "10"),  # a file time is no submission time
    }, got
    page = lambda s: (out / "feedback" / s / "01_attention.html").read_text()  # noqa: E731
    assert "Submitted late: 56.02 hours after the deadline" in page("doejohn_3333")
    assert "Late penalty 30%: 10 points count as 7." in page("doejohn_3333")
    assert "迟交" in page("wuann_5555") and "学习平台标记为迟交" in page("wuann_5555")
    assert "late" not in page("leebo_4444").lower() and "late" not in page("kimpark_6666").lower()
    report = (out / "report" / "index.html").read_text()
    section = report.split("Late submissions")[1]
    assert "doejohn_3333" in section and "wuann_5555" in section
    assert "leebo_4444" not in section and "kimpark_6666" not in section
    export(
        out,
        graded,
        [{**s.meta(), "student": s.student, "lms_late": False, "submitted_at": ""} for s in subs],
        cfg,
    )
    assert "Submitted late" not in page("doejohn_3333"), "a notice that no longer holds is taken off"


def test_the_mistakes_chart_keeps_every_label_whole(tmp_path):
    """A long hint is wrapped on the chart, never cut, and the saved chart is wide enough for it."""
    from PIL import Image

    from autograder.record import report

    hint = (
        "the scores are divided by d_k instead of sqrt(d_k): the softmax is far too flat for large "
        "heads and the weights barely depend on the keys, which the hidden case with d_k = 64 shows; "
        "compare the scale with the equation above the code"
    )
    label = report.mistake_label(["01_attention", "scaled_dot_product_attention", hint, 3])
    assert " ".join(label.split()) == f"scaled_dot_product_attention: {hint}"
    n = {"scores": {}, "mistakes": {}}
    report._plots(tmp_path, n, [], [], [["01_attention", "scaled_dot_product_attention", hint, 3]])
    width, height = Image.open(tmp_path / "mistakes.png").size
    assert width > 600 and height > 100, (width, height)


def test_a_chinese_class_gets_its_charts_in_chinese(tmp_path):
    """A Chinese class's mistakes chart names the mistake in Chinese, wrapped by display width, and
    draws every glyph when a CJK font is installed (no 'Glyph ... missing' warning)."""
    import warnings

    from byhand import fonts, i18n
    from byhand.width import width

    from autograder.record import report

    hint = "the scores are divided by d_k: divide by sqrt(d_k), the std of q.k"
    row = ["01_attention", "scaled_dot_product_attention", hint, 3]
    label = report.mistake_label(row, "zh_CN")
    expected = f"scaled_dot_product_attention：{i18n.hint(hint, 'zh_CN')}"
    assert "".join(label.split()) == "".join(expected.split()), f"got {label!r}, expected {expected!r}"
    assert "s\nqrt" not in label and "(d_\nk)" not in label, f"a word cut in two: {label!r}"
    assert expected != f"scaled_dot_product_attention：{hint}", "the hint was not translated"
    assert all(width(line) <= 60 for line in label.split("\n")), label
    if not fonts.installed():
        pytest.skip("no CJK font on this machine (Debian: fonts-noto-cjk)")
    n = {"scores": {"01_attention": [("s1", 2, 13, False)]}, "mistakes": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph is a UserWarning from matplotlib
        report._plots(tmp_path, n, ["01_attention"], [["01_attention", "q", 0, 1, "0.5"]], [row], "zh_CN")
    assert (tmp_path / "mistakes.png").exists() and (tmp_path / "scores.png").exists()


def test_formgrader_s_submission_time_is_the_lms_s(tmp_path):
    """The time `[lms] times` (or Blackboard) gives is the one formgrader shows (timestamp.txt and
    the gradebook's timestamp), not the file's mtime: the submission's time is an ISO string, which
    `nbgrader_folders` took for missing and so always wrote the mtime (found in issue 52's term run)."""
    from autograder.collect.submissions import Submission
    from autograder.outcomes import Graded
    from autograder.record import folders

    path = tmp_path / "hana.ipynb"
    path.write_text("{}", encoding="utf-8")
    sub = Submission(
        student="hana_1008",
        lesson="01_attention",
        path=path,
        submitted_at="2027-01-26T12:00:00+01:00",
        time_source="lms",
    )
    stamp = folders.nbgrader_folders(tmp_path / "out", sub, Graded("hana_1008", "01_attention", rows=[]))
    expected = "2027-01-26 11:00:00"
    assert stamp is not None and stamp.startswith(expected), f"got {stamp!r}, expected {expected}... (UTC)"
    written = (tmp_path / "out" / "submitted" / "hana_1008" / "01_attention" / "timestamp.txt").read_text()
    assert written.startswith(expected), f"got {written!r} in timestamp.txt, expected {expected}..."
