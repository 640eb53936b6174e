"""Does grading give exactly the expected grades, catch every classic mistake, and accept correct
answers written differently? (The real pipeline: nbgrader gradebook, sandboxed kernels.)"""

import csv
import os
import shutil

import byhand as checks
import nbformat
import pytest
from byhand import _depends
from shared_class import SHARED_GROUP, keeps_in_gate

from autograder import course
from autograder.classroom import grade_class
from autograder.outcomes import safe_name
from autograder.record.export import SUMMARY_COLUMNS
from examples import answers_for, feedback_problems, lessons_with_answers
from examples.build import CLASS, EXPECTED, build, fill


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


EXAMPLE_STUDENTS = sorted(p.name for p in CLASS.iterdir())


def add_students(folder, keep=None):
    """This file's students in the shared class (tests/shared_class.py): the example class, and
    the catalogue's correct alternatives that print, warn or write to stderr; only the notebooks
    `keep(student, lesson)` keeps, when given (the gate's part)."""
    shutil.copytree(CLASS, folder, dirs_exist_ok=True)
    if keep is not None:
        for notebook in sorted(folder.glob("*/*.ipynb")):
            if not keep(notebook.parent.name, notebook.stem):
                notebook.unlink()
    for kind, lesson, name, cells, _ in CATALOGUE:
        if kind == "alternative" and _speaks(cells) and (keep is None or keep(name, lesson)):
            (folder / f"{kind}-{lesson}-{name}").mkdir(parents=True)
            nbformat.write(fill(lesson, cells), folder / f"{kind}-{lesson}-{name}" / f"{lesson}.ipynb")


def _speaks(cells) -> bool:
    """Does an answer print, warn or write to stderr? (Those are graded in kernels in the gate.)"""
    return any(word in source for source in cells.values() for word in ("print(", "warn", "stderr"))


@pytest.fixture
def example_grades(shared_class):
    """(out, example class rows of grades.csv, gradebook URL) from the shared class."""
    return shared_class.out, shared_class.rows(EXAMPLE_STUDENTS), shared_class.db_url


def test_bundled_class_is_up_to_date(tmp_path):
    """Is the committed example class what `python -m autograder examples` builds now?"""
    fresh = tmp_path / "class"
    build(fresh, expected=tmp_path / "expected_grades.csv")
    assert (tmp_path / "expected_grades.csv").read_text() == EXPECTED.read_text(), (
        "expected_grades.csv is stale: run `make examples`"
    )
    for path in sorted(fresh.rglob("*.ipynb")):
        committed = CLASS / path.relative_to(fresh)
        assert committed.exists() and committed.read_bytes() == path.read_bytes(), (
            f"{committed} is stale: run `make examples`"
        )


def test_example_class_gets_expected_grades(example_grades, shared_class):
    """Does every (student, lesson, question) get exactly the points expected_grades.csv says? (The
    gate's shared class: every notebook it graded, tests/shared_class.py.)"""
    _, rows, _ = example_grades
    got = {
        (r["student"], r["lesson"], r["question"]): (float(r["points"]), float(r["max_points"])) for r in rows
    }
    expected = {
        (r["student"], r["lesson"], r["question"]): (float(r["points"]), float(r["max_points"]))
        for r in _read(EXPECTED)
        if shared_class.keeps(r["student"], r["lesson"])
    }
    wrong = {k: (got.get(k), v) for k, v in expected.items() if got.get(k) != v}
    assert not wrong, "got vs expected (points, max):\n" + "\n".join(
        f"{k}: {g} vs {e}" for k, (g, e) in wrong.items()
    )
    assert set(got) == set(expected), f"unexpected rows: {set(got) ^ set(expected)}"


def test_blank_notebook_says_not_done_for_every_question(example_grades):
    """Does a blank submission run to the end and say, per question, that it is not done yet?"""
    _, rows, _ = example_grades
    rows = [r for r in rows if r["student"] == "bob"]
    assert rows and all(r["status"] == "failed" and "not done yet" in r["message"] for r in rows), rows


def test_output_files_follow_the_contract(example_grades):
    """Do grades.csv, summary.csv and feedback/ have exactly the contract's shape?"""
    out, _, _ = example_grades
    with open(out / "grades.csv") as f:
        assert f.readline().strip() == "student,lesson,question,points,max_points,status,message"
    with open(out / "summary.csv") as f:
        assert f.readline().strip() == ",".join(SUMMARY_COLUMNS)
    for r in _read(out / "grades.csv"):  # the whole shared class: attacks and broken files too
        assert r["status"] in ("passed", "failed", "error", "ungradable", "needs grading")
        assert (r["status"] == "ungradable") == (r["question"] == "")
        if r["status"] != "passed":
            assert r["message"], f"no message for {r}"
    students = set(EXAMPLE_STUDENTS)
    assert {r["student"] for r in _read(out / "summary.csv")} >= students, (
        "a student is missing from summary.csv"
    )
    for r in _read(out / "summary.csv"):
        if r["lesson"] and r["status"] != "ungradable":
            assert (out / "feedback" / safe_name(r["student"]) / f"{r['lesson']}.html").exists()


def test_feedback_never_shows_hidden_tests_or_solutions(example_grades):
    """Is every feedback page free of hidden test code, reference answers and grader paths?"""
    out, _, _ = example_grades
    # the example students' pages (an attack's page may show what it printed of the machine)
    pages = [p for s in EXAMPLE_STUDENTS for p in (out / "feedback" / s).rglob("*.html")]
    assert pages
    for page in pages:
        text = page.read_text()
        for leak in ("BEGIN HIDDEN TESTS", "hidden=True", "BEGIN SOLUTION", str(course.ROOT), "@@probe-"):
            assert leak not in text, f"{leak!r} in {page}"


@pytest.mark.full  # 24 notebooks again; the gate's killed-worker and resume tests compare re-grades too
def test_grading_twice_gives_the_same_grades(example_grades, tmp_path):
    """Does a second, independent run (serial where the first was parallel, no resume) give
    identical grades? (Three students, every lesson: perfect, blank and mistaken.)"""
    _, rows, _ = example_grades
    subset = tmp_path / "class"
    for student in ("alice", "carol", "erin"):
        shutil.copytree(CLASS / student, subset / student)
    again = tmp_path / "again"
    grade_class(subset, again, workers=1, quiet=True, resume=False)
    first = [r for r in rows if r["student"] in ("alice", "carol", "erin")]
    assert _read(again / "grades.csv") == first


def test_gradebook_holds_the_same_scores(example_grades):
    """Are the scores in nbgrader's gradebook the ones in grades.csv?"""
    from autograder.record.gradebook import scores

    _, rows, db_url = example_grades
    db = scores(db_url)
    for r in rows:
        if r["question"]:
            assert db[(r["student"], r["lesson"], r["question"])] == float(r["points"])


# ---------------------------------------------------------------------------------------------
# the catalogue of mistakes and alternatives, graded for real
#
# Every catalogued mistake and alternative is judged by the grader's own verdict, through the wire,
# in tests/test_verdict.py (in-process, seconds). In sandboxed kernels, `make test` grades the
# alternatives that print, warn or write to stderr (in the shared class: those are what a kernel
# adds); `make test-full` grades every alternative and the first mistake of each question, so each
# question's failing path runs end to end once. `make test-catalogue` (TBB_CATALOGUE=all) grades
# every mistake this way: about 200 notebooks.

ALL_MISTAKES = os.environ.get("TBB_CATALOGUE") == "all"


def _catalogue():
    items, seen = [], set()
    for lesson in lessons_with_answers():
        mod = answers_for(lesson)
        perfect = next(v for k, v in mod.STUDENTS.items() if k.startswith("alice"))
        for name, spec in mod.MISTAKES.items():
            if ALL_MISTAKES or (lesson, spec["question"]) not in seen:
                items.append(("mistake", lesson, name, {**perfect, **spec["cells"]}, spec))
            seen.add((lesson, spec["question"]))
        for name, cells in mod.ALTERNATIVES.items():
            items.append(("alternative", lesson, name, {**perfect, **cells}, None))
    return items


CATALOGUE = _catalogue()
FULL = pytest.mark.full
SHARED = pytest.mark.xdist_group(SHARED_GROUP)  # asks for `shared_class` at run time, not by argument


@pytest.fixture(scope="session")
def catalogue_grades(tmp_path_factory):
    """Every catalogue item not in the shared class, graded: {student: {question: row}}."""
    root = tmp_path_factory.mktemp("catalogue")
    subs = root / "class"
    for kind, lesson, name, cells, _ in CATALOGUE:
        if kind == "mistake" or not _speaks(cells):
            folder = subs / f"{kind}-{lesson}-{name}"
            folder.mkdir(parents=True)
            nbformat.write(fill(lesson, cells), folder / f"{lesson}.ipynb")
    out = root / "out"
    grade_class(subs, out, workers=2, quiet=True)
    return _by_student(_read(out / "grades.csv"))


def _by_student(rows) -> dict:
    by = {}
    for r in rows:
        by.setdefault(r["student"], {})[r["question"]] = r
    return by


@pytest.mark.parametrize(
    "lesson,name", [pytest.param(les, n, marks=FULL) for k, les, n, _, _ in CATALOGUE if k == "mistake"]
)
def test_classic_mistake_loses_points_when_graded(catalogue_grades, lesson, name):
    """Does this classic mistake lose points on its question, with its hint in the message, and on no
    other question (the later ones that run it get the reference in its place)?"""
    spec = answers_for(lesson).MISTAKES[name]
    row = catalogue_grades[f"mistake-{lesson}-{name}"][spec["question"]]
    assert float(row["points"]) < float(row["max_points"]), f"{name} got full points: {row}"
    problems = feedback_problems(spec, row["message"])
    assert not problems, f"the graded message {'; '.join(problems)}: {row['message']}"
    # one mistake costs one question: the later questions that run it get the reference in its place
    # (byhand._depends), except those that build on the student's answer on purpose (BUILDS_ON)
    module, rows = checks.for_lesson(lesson), catalogue_grades[f"mistake-{lesson}-{name}"]
    lost = {
        q: r["message"]
        for q, r in rows.items()
        if q not in (spec["question"], "")
        and q not in course.manual_questions(lesson)
        and not _depends.keeps(q, spec["question"], module.QUESTIONS)
        and float(r["points"]) < float(r["max_points"])
    }
    assert not lost, f"{name} also lost: {lost}"


def _alternative_marks(lesson, name, cells):
    """In the shared class when it speaks; `full` when `make test-full` grades it in kernels (it does
    not speak), or the gate's shared class leaves its lesson out (tests/shared_class.py)."""
    if not _speaks(cells):
        return FULL
    return SHARED if keeps_in_gate(name, lesson) else (SHARED, FULL)


@pytest.mark.parametrize(
    "lesson,name,shared",
    [
        pytest.param(les, n, _speaks(cells), marks=_alternative_marks(les, n, cells), id=f"{les}-{n}")
        for k, les, n, cells, _ in CATALOGUE
        if k == "alternative"
    ],
)
def test_correct_alternative_gets_full_points_when_graded(request, lesson, name, shared):
    """Does a correct answer written another way (prints, warnings, stderr included) get full points?"""
    student = f"alternative-{lesson}-{name}"
    if shared:  # graded in the shared class (the fixture is asked for only here, to keep the rest apart)
        rows = _by_student(request.getfixturevalue("shared_class").rows([student]))[student]
    else:
        rows = request.getfixturevalue("catalogue_grades")[student]
    written = course.manual_questions(lesson)  # a person grades those; an alternative is code only
    lost = {
        q: r["message"]
        for q, r in rows.items()
        if q not in written and float(r["points"]) < float(r["max_points"])
    }
    assert not lost, f"{name} lost points: {lost}"
