"""Collection: real LMS export layouts (Canvas, Moodle flat and folders, Blackboard) on disk and in
zips, identity by LMS id, nothing dropped silently, and regrading a subset into a class's OUT."""

import csv
import shutil
import tempfile
import zipfile
from pathlib import Path

import pytest

from autograder import course
from autograder.classroom import grade_class
from autograder.collect import submissions
from autograder.collect.submissions import lesson_of
from examples.build import CLASS

LESSONS = course.lessons()
_STAGING: Path  # set per test by _staging
ALICE = CLASS / "alice" / "01_attention.ipynb"  # perfect
BOB = CLASS / "bob" / "01_attention.ipynb"  # blank


@pytest.fixture(autouse=True)
def _staging(tmp_path_factory):
    """Where collect() copies what it grades when the test names no workdir: pytest's temporary
    folder, which pytest prunes, not a fresh folder under /tmp that nobody removes."""
    global _STAGING
    _STAGING = tmp_path_factory.mktemp("staged")


def collect(source, lessons, **kw):
    kw.setdefault("workdir", Path(tempfile.mkdtemp(dir=_STAGING)))
    return submissions.collect(source, lessons, **kw)


def _put(folder: Path, name: str, src: Path = ALICE) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, path)
    return path


def _rows(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _by(subs):
    return {(s.student, s.lesson): s for s in subs}


def test_canvas_same_name_students_stay_two_with_their_ids(tmp_path):
    """Do two Canvas students with the same sortable name stay two students, each with their id,
    and is `_LATE_` kept as a marker rather than part of the name?"""
    _put(tmp_path, "smithjane_1111_9001_01_attention.ipynb")
    _put(tmp_path, "smithjane_2222_9002_01_attention.ipynb", BOB)
    _put(tmp_path, "doejohn_LATE_3333_9003_01_attention-1.ipynb")
    _put(tmp_path, "LATE_anon_Xy12z_9004_01_attention.ipynb")
    subs = _by(collect(tmp_path, LESSONS))
    assert set(subs) == {
        ("smithjane_1111", "01_attention"),
        ("smithjane_2222", "01_attention"),
        ("doejohn_3333", "01_attention"),
        ("anon_Xy12z", "01_attention"),
    }, sorted(subs)
    a, b = subs[("smithjane_1111", "01_attention")], subs[("smithjane_2222", "01_attention")]
    assert (a.lms, a.lms_id, a.name, a.attachment_id) == ("canvas", "1111", "smithjane", "9001")
    assert (b.lms_id, b.attachment_id) == ("2222", "9002")
    assert a.path.read_bytes() == ALICE.read_bytes() and b.path.read_bytes() == BOB.read_bytes()
    late = subs[("doejohn_3333", "01_attention")]
    assert late.lms_late and not a.lms_late
    assert late.note == "graded 01_attention-1.ipynb as 01_attention", late.note
    anon = subs[("anon_Xy12z", "01_attention")]
    assert anon.lms_late and anon.lms_id == "anon_Xy12z"


def test_canvas_names_with_one_id(tmp_path):
    """A hand-made export `<name>_<id>_<file>` (no attachment id; none starts with 0): is the id kept
    and the whole `01_attention.ipynb` taken as the file, without a rename note?"""
    _put(tmp_path, "alice_1000_01_attention.ipynb")
    (s,) = collect(tmp_path, LESSONS)
    assert (s.student, s.lesson, s.lms_id, s.attachment_id, s.note) == (
        "alice_1000",
        "01_attention",
        "1000",
        "",
        "",
    )


def test_moodle_flat_and_folder_exports(tmp_path):
    """Are Moodle's flat files and both folder-per-student namings (before and since 4.1)
    recognised, and does a student whose folder holds no notebook get a row saying so?"""
    _put(tmp_path, "Bo Lee_4502_assignsubmission_file_01_attention.ipynb")
    _put(
        tmp_path, "Al Wu_77_assignsubmission_file_/02_layernorm.ipynb", CLASS / "alice" / "02_layernorm.ipynb"
    )
    _put(tmp_path, "Cy Ng_78_assignsubmission_file/sub/01_attention.ipynb")
    (tmp_path / "Di Ma_79_assignsubmission_onlinetext_").mkdir()
    (tmp_path / "Di Ma_79_assignsubmission_onlinetext_" / "onlinetext.html").write_text("<p>hi</p>")
    subs = _by(collect(tmp_path, LESSONS))
    assert set(subs) == {
        ("Bo Lee_4502", "01_attention"),
        ("Al Wu_77", "02_layernorm"),
        ("Cy Ng_78", "01_attention"),
        ("Di Ma_79", ""),
    }, sorted(subs)
    bo = subs[("Bo Lee_4502", "01_attention")]
    assert (bo.lms, bo.lms_id, bo.name, bo.note) == ("moodle", "4502", "Bo Lee", "")
    di = subs[("Di Ma_79", "")]
    assert di.path is None and "no notebook of a known lesson found (onlinetext.html)" in di.note


def test_blackboard_attempts_receipts_and_times(tmp_path):
    """Is a Blackboard file's username its student, its attempt timestamp the submission time, the
    receipt's name kept (and its username used when it holds "_"), and the latest attempt graded?"""
    _put(tmp_path, "Lesson 1_jsmith_attempt_2026-03-01-23-59-10_01_attention.ipynb", BOB)
    _put(tmp_path, "Lesson 1_jsmith_attempt_2026-03-02-08-00-00_01_attention.ipynb")
    (tmp_path / "Lesson 1_jsmith_attempt_2026-03-02-08-00-00.txt").write_text(
        "Name: Jane Smith (jsmith)\nAssignment: Lesson 1\nDate Submitted: Monday, March 2, 2026\n"
    )
    _put(tmp_path, "Lesson 1_k_park_attempt_2026-03-02-10-00-00_attention.ipynb")
    (tmp_path / "Lesson 1_k_park_attempt_2026-03-02-10-00-00.txt").write_text("Name: Kim Park (k_park)\n")
    (tmp_path / "Lesson 1_nofile_attempt_2026-03-02-10-00-00.txt").write_text("Name: No File (nofile)\n")
    subs = _by(collect(tmp_path, LESSONS))
    assert set(subs) == {("jsmith", "01_attention"), ("k_park", "01_attention"), ("nofile", "")}, sorted(subs)
    j = subs[("jsmith", "01_attention")]
    assert (j.lms, j.name, j.submitted_at, j.time_source) == (
        "blackboard",
        "Jane Smith",
        "2026-03-02T08:00:00",
        "lms",
    )
    assert j.path.read_bytes() == ALICE.read_bytes()  # the later attempt
    assert "also found 01_attention.ipynb" in j.note
    k = subs[("k_park", "01_attention")]
    assert (k.lms_id, k.name) == ("k_park", "Kim Park")
    assert subs[("nofile", "")].path is None


def test_a_file_no_layout_explains_gets_a_row(tmp_path):
    """Does a top-level notebook no layout recognises get its own ungradable row and message?"""
    _put(tmp_path, "attention_final.ipynb")
    _put(tmp_path, "alice/01_attention.ipynb")
    (tmp_path / "README.txt").write_text("class of 2026")
    subs = _by(collect(tmp_path, LESSONS))
    assert set(subs) == {("alice", "01_attention"), ("attention_final.ipynb", "")}
    stray = subs[("attention_final.ipynb", "")]
    assert stray.path is None and "matches no known layout" in stray.note


def test_a_zip_of_an_lms_export_collects_like_the_folder(tmp_path):
    """Does a zip (with one enclosing folder) give the same students, lessons and ids as the folder,
    with the zip entry's time recorded as such?"""
    folder = tmp_path / "export"
    _put(folder, "smithjane_1111_9001_01_attention.ipynb")
    _put(folder, "Bo Lee_4502_assignsubmission_file_/01_attention.ipynb", BOB)
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(folder.rglob("*.ipynb")):
            zf.write(path, "download/" + path.relative_to(folder).as_posix())
    flat = [(s.student, s.lesson, s.lms_id, s.path.read_bytes()) for s in collect(folder, LESSONS)]
    zipped = collect(archive, LESSONS, workdir=tmp_path / "work")
    assert [(s.student, s.lesson, s.lms_id, s.path.read_bytes()) for s in zipped] == flat
    assert all(s.time_source == "zip entry time" and s.submitted_at for s in zipped)


def test_custom_pattern_with_an_id(tmp_path):
    """Does --pattern map another LMS's names, keeping an (?P<id>) group as the LMS id?"""
    _put(tmp_path, "01_attention--lee--42.ipynb")
    _put(tmp_path, "01_attention--lee--43.ipynb")
    subs = collect(tmp_path, LESSONS, pattern=r"^(?P<lesson>.+?)--(?P<student>.+)--(?P<id>\d+)\.ipynb$")
    assert [(s.student, s.lesson, s.lms_id) for s in subs] == [
        ("lee_42", "01_attention", "42"),
        ("lee_43", "01_attention", "43"),
    ]


@pytest.mark.parametrize(
    "name, lesson",
    [
        ("01_attention-1.ipynb", "01_attention"),
        ("01_attention (2).ipynb", "01_attention"),
        ("Attention.ipynb", "01_attention"),
        ("02_layernorm-Copy1.ipynb", "02_layernorm"),
        ("notes.ipynb", ""),
    ],
)
def test_renamed_files_map_to_their_lesson(name, lesson):
    """Do browser and LMS renames (`-1` for a duplicate upload) map to their lesson, and others to none?"""
    assert lesson_of(name, LESSONS) == lesson


def test_the_contract_layout_is_unchanged():
    """Does the bundled example class (`<student>/<lesson>.ipynb`) collect as before: one item per
    file, students named by their folders, no LMS identity?"""
    subs = collect(CLASS, LESSONS)
    expected = sorted((p.parent.name, p.stem) for p in CLASS.glob("*/*.ipynb"))
    assert sorted((s.student, s.lesson) for s in subs) == expected
    assert all(s.lms == "" and s.lms_id == "" for s in subs)


@pytest.mark.e2e
def test_regrading_one_student_keeps_the_class(tmp_path):
    """Graded as a class, then one student regraded from a folder holding only them (and once more
    with --only): are the others' rows unchanged, the regraded student's rows new, and do
    grades.csv, summary.csv, students.csv and the report describe the whole class each time?"""
    first = tmp_path / "class"
    _put(first, "smithjane_1111_9001_01_attention.ipynb", BOB)
    _put(first, "smithjane_2222_9002_01_attention.ipynb")
    out = tmp_path / "out"
    grade_class(first, out, workers=1, quiet=True)
    before = _rows(out / "grades.csv")
    assert {r["student"] for r in before} == {"smithjane_1111", "smithjane_2222"}
    assert {r["student"]: r["points"] for r in _rows(out / "summary.csv")} == {
        "smithjane_1111": "0",
        "smithjane_2222": "10",
    }
    regrade = tmp_path / "regrade"
    _put(regrade, "smithjane_1111_9005_01_attention.ipynb")  # the corrected notebook
    result = grade_class(regrade, out, workers=1, quiet=True)
    after = _rows(out / "grades.csv")
    assert [r for r in after if r["student"] == "smithjane_2222"] == [
        r for r in before if r["student"] == "smithjane_2222"
    ]
    assert {r["student"]: r["points"] for r in _rows(out / "summary.csv")} == {
        "smithjane_1111": "10",
        "smithjane_2222": "10",
    }
    assert sorted(g.student for g in result["graded"]) == ["smithjane_1111", "smithjane_2222"]
    assert [g.student for g in result["this_run"]] == ["smithjane_1111"]
    students = _rows(out / "students.csv")
    assert [(r["student"], r["lms_id"]) for r in students] == [
        ("smithjane_1111", "1111"),
        ("smithjane_2222", "2222"),
    ]
    # --only: from the full class folder, only smithjane_2222 is graded again; 1111 keeps the regrade
    (first / "smithjane_2222_9002_01_attention.ipynb").write_bytes(BOB.read_bytes())
    result = grade_class(first, out, workers=1, quiet=True, only=["2222"])
    assert [g.student for g in result["this_run"]] == ["smithjane_2222"]
    assert {r["student"]: r["points"] for r in _rows(out / "summary.csv")} == {
        "smithjane_1111": "10",
        "smithjane_2222": "0",
    }
    from autograder.record.report import write_report

    page = write_report(out, result["graded"]).read_text()
    assert "2 students" in page or "2 student" in page, page[:500]


def test_the_newest_attempt_is_graded_by_the_lms_s_evidence(tmp_path):
    """The trial's Canvas export: a blank first upload and the re-upload Canvas saved as
    `..._01_attention-1.ipynb` with a newer attachment id (and a zip whose entry times say nothing).
    Is the re-upload graded, whatever the order of the files, and are both attempts listed?"""
    _put(tmp_path, "doejohn_3333_9001_01_attention.ipynb", BOB)  # blank, older
    _put(tmp_path, "doejohn_3333_9087_01_attention-1.ipynb")  # the re-upload
    _put(tmp_path, "leebo_4444_9200_01_attention-1.ipynb", BOB)  # a newer attachment beats the suffix
    _put(tmp_path, "leebo_4444_9300_01_attention.ipynb")
    _put(tmp_path / "browser", "01_attention.ipynb", BOB)  # no LMS: the browser's re-download
    _put(tmp_path / "browser", "01_attention (2).ipynb")
    subs = _by(collect(tmp_path, LESSONS))
    john = subs[("doejohn_3333", "01_attention")]
    assert john.path.read_bytes() == ALICE.read_bytes(), f"graded {john.file}, expected the re-upload"
    assert john.attachment_id == "9087"
    assert john.attempts == (
        "01_attention-1.ipynb (attachment 9087) (graded); 01_attention.ipynb (attachment 9001)"
    ), john.attempts
    assert "the newest by its attachment id" in john.note
    bo = subs[("leebo_4444", "01_attention")]
    assert (bo.attachment_id, bo.path.read_bytes() == ALICE.read_bytes()) == ("9300", True)
    browser = subs[("browser", "01_attention")]
    assert browser.path.read_bytes() == ALICE.read_bytes() and "re-upload number" in browser.note


def test_a_map_says_which_lesson_a_file_is(tmp_path):
    """Moodle's `layernorm_final.ipynb` names no lesson: `--map layernorm_final.ipynb=02_layernorm`
    (or `--map 02_layernorm` for a whole per-assignment export, or a CSV) says it; a wrong lesson is an
    error, not a guess."""
    folder = tmp_path / "moodle"
    _put(folder, "Bo Lee_4502_assignsubmission_file/layernorm_final.ipynb")
    _put(folder, "Ann Wu_4503_assignsubmission_file/my work.ipynb")
    assert {s.lesson for s in collect(folder, LESSONS)} == {""}  # no name says it
    mapped = submissions.read_lesson_map(["layernorm_final.ipynb=02_layernorm"], LESSONS)
    got = {(s.student, s.lesson) for s in collect(folder, LESSONS, lesson_map=mapped)}
    assert got == {("Bo Lee_4502", "02_layernorm"), ("Ann Wu_4503", "")}, got
    whole = submissions.read_lesson_map(["02_layernorm"], LESSONS)
    got = {(s.student, s.lesson) for s in collect(folder, LESSONS, lesson_map=whole)}
    assert got == {("Bo Lee_4502", "02_layernorm"), ("Ann Wu_4503", "02_layernorm")}, got
    table = tmp_path / "map.csv"
    table.write_text("file,lesson\nAnn Wu_4503_assignsubmission_file/my work.ipynb,03_residual.ipynb\n")
    got = {
        (s.student, s.lesson)
        for s in collect(folder, LESSONS, lesson_map=submissions.read_lesson_map([str(table)], LESSONS))
    }
    assert got == {("Bo Lee_4502", ""), ("Ann Wu_4503", "03_residual")}, got
    with pytest.raises(ValueError, match="not a lesson"):
        submissions.read_lesson_map(["x.ipynb=02_layernrom"], LESSONS)


def _with_answer(src: Path, dst: Path, question: str, text: str) -> None:
    import nbformat

    nb = nbformat.read(src, as_version=4)
    for cell in nb.cells:
        if course.nbgrader_meta(cell).get("grade_id") == question:
            cell.source = text
    dst.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dst)


@pytest.mark.e2e
@pytest.mark.full  # three grading runs of four notebooks: about 2 minutes on 2 cores
def test_a_term_as_the_trial_built_it(tmp_path):
    """The trial's class, graded for real: a Canvas export with a blank first upload and its
    re-upload (`-1`, newer attachment id), a `_LATE_` file whose time the LMS gives, a Moodle folder
    whose file names no lesson (`--map`); written answers graded by hand, then one changed and the
    class regraded. Do totals add up (every question counted, the same maximum for all, nobody over
    100%), is the newest attempt graded, and is the changed answer's hand grade set aside while the
    other stays?"""
    from autograder.record import gradebook

    src = tmp_path / "export"
    _put(src, "doejohn_3333_9001_01_attention.ipynb", BOB)
    _put(src, "doejohn_3333_9087_01_attention-1.ipynb")
    late = src / "leebo_LATE_4444_9100_01_attention.ipynb"
    _with_answer(ALICE, late, "written_sqrt_dk", "Softmax saturates when d_k is large.")
    _put(src, "Ann Wu_4502_assignsubmission_file/attention_final.ipynb")
    (tmp_path / "times.csv").write_text("student,lesson,submitted_at\n4444,01_attention,2026-03-03 10:00\n")
    (tmp_path / "course.toml").write_text(
        'deadline = "2026-03-01 23:59"\n[late_policy]\npercent_per_day = 10\n[lms]\ntimes = "times.csv"\n'
    )
    out = tmp_path / "out"
    kw = dict(
        workers=1,
        quiet=True,
        config=tmp_path / "course.toml",
        lesson_map=["attention_final.ipynb=01_attention"],
    )
    grade_class(src, out, **kw)
    summary = {r["student"]: r for r in _rows(out / "summary.csv")}
    assert {s: (r["points"], r["max_points"]) for s, r in summary.items()} == {
        "doejohn_3333": ("10", "13"),  # the re-upload, not the blank first file
        "leebo_4444": ("8", "13"),  # 20% late: one total everywhere
        "Ann Wu_4502": ("10", "13"),
    }, summary
    # lateness is in submissions.csv (summary.csv keeps exactly the contract's five columns)
    subs = {r["student"]: r for r in _rows(out / "submissions.csv")}
    assert (subs["leebo_4444"]["late"], subs["leebo_4444"]["penalty_percent"]) == ("yes (LMS)", "20")
    assert subs["doejohn_3333"]["late"] == ""  # a copy's file time is no submission time
    canvas = list(csv.reader(open(out / "lms" / "canvas_gradebook.csv")))
    assert canvas[1][5] == "13"
    db_url = gradebook.default_url(out)
    with gradebook.open_gradebook(db_url) as gb:  # the instructor grades both, as formgrader's API does
        for student in ("doejohn_3333", "leebo_4444"):
            for question, score in (("written_sqrt_dk", 2.0), ("written_masked_row", 1.0)):
                grade = gb.find_grade(question, "01_attention", "01_attention", student)
                grade.manual_score, grade.needs_manual_grade = score, False
        gb.db.commit()
    grade_class(src, out, **kw)  # nothing changed: hand grades in, nothing flagged
    summary = {r["student"]: r for r in _rows(out / "summary.csv")}
    # both hand-graded to 13; leebo's 20% late penalty applies to the hand grades too (one total)
    assert (summary["doejohn_3333"]["points"], summary["leebo_4444"]["points"]) == ("13", "10.4")
    wide = {r["student"]: r for r in _rows(out / "lms" / "grades_wide.csv")}
    assert {w["max_total"] for w in wide.values()} == {"13"}
    assert all(float(w["total"]) <= 13 for w in wide.values())
    _with_answer(ALICE, late, "written_sqrt_dk", "Because of the learning rate.")  # a resubmission
    grade_class(src, out, **kw)
    rows = {(r["student"], r["question"]): r for r in _rows(out / "grades.csv")}
    changed = rows[("leebo_4444", "written_sqrt_dk")]
    assert (changed["points"], changed["status"]) == ("0", "needs grading"), changed
    assert rows[("leebo_4444", "written_masked_row")]["points"] == "1"
    assert rows[("doejohn_3333", "written_sqrt_dk")]["points"] == "2"
    with gradebook.open_gradebook(db_url) as gb:
        flagged = {
            (s, g.name)
            for s in ("doejohn_3333", "leebo_4444")
            for g in gb.find_submission_notebook("01_attention", "01_attention", s).grades
            if g.needs_manual_grade
        }
    assert flagged == {("leebo_4444", "written_sqrt_dk")}, flagged
