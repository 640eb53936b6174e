"""Does grading give exactly the expected grades, catch every classic mistake, and accept correct
answers written differently? (The real pipeline: nbgrader gradebook, sandboxed kernels.)"""

import csv
import os
import shutil

import nbformat
import pytest

from autograder import course
from autograder.classroom import GRADE_COLUMNS, SUMMARY_COLUMNS, grade_class
from examples import answers_for, feedback_problems, lessons_with_answers
from examples.build import CLASS, EXPECTED, build, fill


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="session")
def example_grades(tmp_path_factory):
    out = tmp_path_factory.mktemp("example-out")
    result = grade_class(CLASS, out, workers=2, quiet=True)
    return out, result


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


def test_example_class_gets_expected_grades(example_grades):
    """Does every (student, lesson, question) get exactly the points expected_grades.csv says?"""
    out, _ = example_grades
    got = {
        (r["student"], r["lesson"], r["question"]): (float(r["points"]), float(r["max_points"]))
        for r in _read(out / "grades.csv")
    }
    expected = {
        (r["student"], r["lesson"], r["question"]): (float(r["points"]), float(r["max_points"]))
        for r in _read(EXPECTED)
    }
    wrong = {k: (got.get(k), v) for k, v in expected.items() if got.get(k) != v}
    assert not wrong, "got vs expected (points, max):\n" + "\n".join(
        f"{k}: {g} vs {e}" for k, (g, e) in wrong.items()
    )
    assert set(got) == set(expected), f"unexpected rows: {set(got) ^ set(expected)}"


def test_blank_notebook_says_not_done_for_every_question(example_grades):
    """Does a blank submission run to the end and say, per question, that it is not done yet?"""
    out, _ = example_grades
    rows = [r for r in _read(out / "grades.csv") if r["student"] == "bob"]
    assert rows and all(r["status"] == "failed" and "not done yet" in r["message"] for r in rows), rows


def test_output_files_follow_the_contract(example_grades):
    """Do grades.csv, summary.csv and feedback/ have exactly the contract's shape?"""
    out, _ = example_grades
    with open(out / "grades.csv") as f:
        assert f.readline().strip() == ",".join(GRADE_COLUMNS)
    with open(out / "summary.csv") as f:
        assert f.readline().strip() == ",".join(SUMMARY_COLUMNS)
    for r in _read(out / "grades.csv"):
        assert r["status"] in ("passed", "failed", "error", "ungradable", "needs grading")
        assert (r["status"] == "ungradable") == (r["question"] == "")
        if r["status"] != "passed":
            assert r["message"], f"no message for {r}"
    students = {p.name for p in CLASS.iterdir()}
    assert {r["student"] for r in _read(out / "summary.csv")} == students, (
        "a student is missing from summary.csv"
    )
    for r in _read(out / "summary.csv"):
        if r["lesson"] and r["status"] != "ungradable":
            assert (out / "feedback" / r["student"] / f"{r['lesson']}.html").exists()


def test_feedback_never_shows_hidden_tests_or_solutions(example_grades):
    """Is every feedback page free of hidden test code, reference answers and grader paths?"""
    out, _ = example_grades
    pages = list((out / "feedback").rglob("*.html"))
    assert pages
    for page in pages:
        text = page.read_text()
        for leak in ("BEGIN HIDDEN TESTS", "hidden=True", "BEGIN SOLUTION", str(course.ROOT), "@@probe-"):
            assert leak not in text, f"{leak!r} in {page}"


def test_grading_twice_gives_the_same_grades(example_grades, tmp_path):
    """Does a second, independent run (serial where the first was parallel, no resume) give
    identical grades? (Three students, every lesson: perfect, blank and mistaken.)"""
    out, _ = example_grades
    subset = tmp_path / "class"
    for student in ("alice", "carol", "erin"):
        shutil.copytree(CLASS / student, subset / student)
    again = tmp_path / "again"
    grade_class(subset, again, workers=1, quiet=True, resume=False)
    first = [r for r in _read(out / "grades.csv") if r["student"] in ("alice", "carol", "erin")]
    assert _read(again / "grades.csv") == first


def test_gradebook_holds_the_same_scores(example_grades):
    """Are the scores in nbgrader's gradebook the ones in grades.csv?"""
    from autograder.record.gradebook import scores

    out, result = example_grades
    db = scores(result["db_url"])
    for r in _read(out / "grades.csv"):
        if r["question"]:
            assert db[(r["student"], r["lesson"], r["question"])] == float(r["points"])


# ---------------------------------------------------------------------------------------------
# the catalogue of mistakes and alternatives, graded for real
#
# Every catalogued mistake and alternative is judged by the grader's own verdict, through the wire,
# in tests/test_verdict.py (in-process, seconds). Here they are graded in sandboxed kernels: every
# alternative (prints, warnings and stderr matter in a kernel) and the first mistake of each
# question, so each question's failing path runs end to end once. `make test-catalogue`
# (TBB_CATALOGUE=all) grades every mistake this way: about 200 notebooks (the 53 here take 3-4 min).

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


@pytest.fixture(scope="session")
def catalogue_grades(tmp_path_factory):
    root = tmp_path_factory.mktemp("catalogue")
    subs = root / "class"
    for kind, lesson, name, cells, _ in CATALOGUE:
        folder = subs / f"{kind}-{lesson}-{name}"
        folder.mkdir(parents=True)
        nbformat.write(fill(lesson, cells), folder / f"{lesson}.ipynb")
    out = root / "out"
    grade_class(subs, out, workers=2, quiet=True)
    rows = {}
    for r in _read(out / "grades.csv"):
        rows.setdefault(r["student"], {})[r["question"]] = r
    return rows


@pytest.mark.parametrize("lesson,name", [(les, n) for k, les, n, _, _ in CATALOGUE if k == "mistake"])
def test_classic_mistake_loses_points_when_graded(catalogue_grades, lesson, name):
    """Does this classic mistake lose points on its question, with its hint in the message?"""
    spec = answers_for(lesson).MISTAKES[name]
    row = catalogue_grades[f"mistake-{lesson}-{name}"][spec["question"]]
    assert float(row["points"]) < float(row["max_points"]), f"{name} got full points: {row}"
    problems = feedback_problems(spec, row["message"])
    assert not problems, f"the graded message {'; '.join(problems)}: {row['message']}"


@pytest.mark.parametrize("lesson,name", [(les, n) for k, les, n, _, _ in CATALOGUE if k == "alternative"])
def test_correct_alternative_gets_full_points_when_graded(catalogue_grades, lesson, name):
    """Does a correct answer written another way (prints, warnings, stderr included) get full points?"""
    rows = catalogue_grades[f"alternative-{lesson}-{name}"]
    written = course.manual_questions(lesson)  # a person grades those; an alternative is code only
    lost = {
        q: r["message"]
        for q, r in rows.items()
        if q not in written and float(r["points"]) < float(r["max_points"])
    }
    assert not lost, f"{name} lost points: {lost}"
