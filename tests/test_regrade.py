"""A regrade says what triggered it and grades again only what that decides: a change to one
lesson's checks regrades that lesson, not the class."""

from __future__ import annotations

import shutil

from autograder import classroom, course, state
from autograder.collect.submissions import Submission
from autograder.judge import grade
from autograder.outcomes import Graded, Row
from autograder.run import rootfs, sandbox
from examples.build import CLASS


def _subs(tmp_path) -> list:
    out = []
    for student in ("alice", "bob"):
        for lesson in ("01_attention", "02_layernorm"):
            src = CLASS / student / f"{lesson}.ipynb"
            if not src.exists():
                src = CLASS / "alice" / "01_attention.ipynb"
            path = tmp_path / "in" / student / f"{lesson}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, path)
            out.append(Submission(student, lesson, path))
    return out


def _graded_once(tmp_path, subs):
    run = classroom.ClassRun(tmp_path / "out", sandbox.Limits(), True, True, None)
    todo = run.plan(subs)
    assert len(todo) == len(subs) and run.reasons == {}  # nothing saved yet: nothing to explain
    for sub, fp, saved in todo:
        state.save(
            saved,
            fp,
            Graded(sub.student, sub.lesson, [Row(sub.student, sub.lesson, "q", 1, 1, "passed")]),
            sub,
            run.parts[sub.key],
        )
    return run


def test_a_change_to_one_lesson_s_checks_regrades_that_lesson_and_says_so(tmp_path, monkeypatch):
    subs = _subs(tmp_path)
    _graded_once(tmp_path, subs)
    again = classroom.ClassRun(tmp_path / "out", sandbox.Limits(), True, True, None)
    assert again.plan(subs) == [] and again.reasons == {}
    # the checks package with lesson 02's module edited (a copy: tests never write the checkout)
    byhand = tmp_path / "byhand"
    shutil.copytree(rootfs.BYHAND, byhand, ignore=shutil.ignore_patterns("__pycache__"))
    edited = byhand / "layernorm" / "layer_norm.py"  # one exercise's module of the lesson's package
    edited.write_text(edited.read_text() + "\n# a fixed check\n")
    before = {lesson: grade.lesson_version(lesson) for lesson in course.lessons()}
    monkeypatch.setattr(rootfs, "BYHAND", byhand)
    after = {lesson: grade.lesson_version(lesson) for lesson in course.lessons()}
    changed = sorted(lesson for lesson in before if before[lesson] != after[lesson])
    assert changed == ["02_layernorm"], f"got {changed} regraded for an edit of layernorm/layer_norm.py"
    third = classroom.ClassRun(tmp_path / "out", sandbox.Limits(), True, True, None)
    todo = third.plan(subs)
    assert sorted((s.student, s.lesson) for s, _, _ in todo) == [
        ("alice", "02_layernorm"),
        ("bob", "02_layernorm"),
    ]
    assert third.reasons == {"the lesson's checks changed (02_layernorm)": 2}, third.reasons
    # a shared module (the judge) is read by every lesson
    (byhand / "_judge.py").write_text((byhand / "_judge.py").read_text() + "\n# shared\n")
    assert all(grade.lesson_version(lesson) != after[lesson] for lesson in course.lessons())
    # and so is a module of the shared package byhand/_core/ (the verdict)
    shared = {lesson: grade.lesson_version(lesson) for lesson in course.lessons()}
    judging = byhand / "_core" / "judging.py"
    judging.write_text(judging.read_text() + "\n# shared\n")
    unchanged = [lesson for lesson in course.lessons() if grade.lesson_version(lesson) == shared[lesson]]
    assert unchanged == [], f"got {unchanged} unchanged by an edit of _core/judging.py, expected none"


def test_an_edit_of_a_lesson_package_s_module_changes_that_lesson_s_version_only(tmp_path, monkeypatch):
    """Lesson 07's checks are a package (byhand/decoder/, a module per exercise): does an edit of one
    of its modules change that lesson's checks version, and no other lesson's?"""
    byhand = tmp_path / "byhand"
    shutil.copytree(rootfs.BYHAND, byhand, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(rootfs, "BYHAND", byhand)
    before = {lesson: grade.lesson_version(lesson) for lesson in course.lessons()}
    gpt = byhand / "decoder" / "gpt.py"
    gpt.write_text(gpt.read_text() + "\n# a fixed check\n")
    after = {lesson: grade.lesson_version(lesson) for lesson in course.lessons()}
    changed = sorted(lesson for lesson in before if before[lesson] != after[lesson])
    assert changed == ["07_decoder"], f"got {changed} changed for an edit of decoder/gpt.py"


def test_a_changed_file_is_named_as_the_reason(tmp_path):
    subs = _subs(tmp_path)
    _graded_once(tmp_path, subs)
    subs[0].path.write_text(subs[0].path.read_text() + " ")
    run = classroom.ClassRun(tmp_path / "out", sandbox.Limits(), True, True, None)
    assert [s.key for s, _, _ in run.plan(subs)] == [subs[0].key]
    assert run.reasons == {"its file changed (01_attention)": 1}
    run = classroom.ClassRun(tmp_path / "out", sandbox.Limits(cell_timeout=7), True, True, None)
    assert len(run.plan(subs)) == 4
    assert run.reasons == {
        "its file changed (01_attention)": 1,  # never saved since it changed
        "the limits changed (01_attention)": 2,
        "the limits changed (02_layernorm)": 2,
    }, run.reasons


def test_an_older_notebook_is_told_so_in_its_language():
    """A notebook downloaded before an exercise was added has neither its answer nor its test cell:
    the grader names that exercise and says to take the current notebook (in the notebook's
    language); a notebook that only lost a test cell is not "older"; an outdated checks package says
    it is older than the notebook instead of a KeyError."""
    import nbformat
    import pytest
    from byhand import _core, attention, i18n

    nb = nbformat.read(course.NOTEBOOKS / "01_attention.ipynb", as_version=4)
    assert grade.older_version_questions(nb, "01_attention") == set()
    old = nbformat.from_dict(nb)
    old.cells = [
        c
        for c in nb.cells
        if course.nbgrader_meta(c).get("grade_id") not in ("MultiHeadAttention_answer", "MultiHeadAttention")
    ]
    assert grade.older_version_questions(old, "01_attention") == {"MultiHeadAttention"}
    edited = nbformat.from_dict(nb)
    edited.cells = [c for c in nb.cells if course.nbgrader_meta(c).get("grade_id") != "MultiHeadAttention"]
    assert grade.older_version_questions(edited, "01_attention") == set()
    zh = grade.localized(i18n.msg(grade.OLDER_NOTEBOOK, name="MultiHeadAttention"), "zh_CN")
    assert "旧版本" in zh and "MultiHeadAttention" in zh, zh
    with pytest.raises(_core.OutdatedChecks, match="newer than your byhand checks"):
        attention.check("a_question_added_later", {})
    with i18n.using("zh_CN") if hasattr(i18n, "using") else _lang("zh_CN"):
        with pytest.raises(_core.OutdatedChecks, match="更新"):
            attention.check("a_question_added_later", {})


class _lang:
    def __init__(self, lang):
        self.lang = lang

    def __enter__(self):
        from byhand import i18n

        self.before = i18n._current[0]
        i18n.language(self.lang)

    def __exit__(self, *exc):
        from byhand import i18n

        i18n.language(self.before)


def test_the_checks_package_says_one_version():
    """The wheel's version (student/pyproject.toml) is the one the package reports and the one its
    "newer than your byhand checks (version V)" message names."""
    import re

    import byhand

    text = (course.ROOT / "student" / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', text, re.M).group(1) == byhand.__version__


# The wheel's contents at each released version of the checks package: a student's `pip install -U`
# only upgrades when the version changes, so a change to what the wheel ships without a new version
# leaves every student who installed it before on checks that no longer match the grader's.
# A new version: `make refresh` bumps student/pyproject.toml and byhand/__init__.py and adds the
# line (autograder/tooling/refresh.py; the older lines stay, a record of what each version shipped).
CHECKS_FINGERPRINTS = {
    "0.2.0": "1c826af23e963c87",
    "0.2.1": "2d4bc85f71fcbcdd",  # the grader pages' words in a gettext catalogue (byhand/locale)
    "0.2.2": "5bf1c5c331b57965",  # the checks' messages from catalogue ids (byhand.i18n.msg)
    "0.2.3": "7f19d04c21185175",  # case labels, notes and the last lines from ids; no regular expressions
    "0.3.0": "48486ffd0379104f",  # a package per lesson, a module per exercise; matplotlib a dependency; CheckFailure shown in the notebook's language
    "0.4.0": "a1d681f78ceb1ac7",  # see CHANGELOG.md, 2026-12-07 (recorded again at each merge of that day)
    "0.4.1": "2abce62315ebb217",  # recorded by make refresh
    "0.4.2": "8f6a1a1f18cf9575",  # recorded by make refresh
    "0.4.3": "3ab2692d064b238e",  # recorded by make refresh
    "0.4.4": "a399b23af9a5ec8a",  # recorded by make refresh
}


def checks_fingerprint() -> str:
    """A hash of every file the student wheel ships (`make refresh` records it)."""
    from autograder.tooling.refresh import checks_fingerprint

    return checks_fingerprint()


def test_changed_checks_come_with_a_new_version():
    """Is the version of the checks package a new one whenever what the wheel ships changed?"""
    import byhand

    now = checks_fingerprint()
    recorded = CHECKS_FINGERPRINTS.get(byhand.__version__)
    assert recorded == now, (
        f"the checks package changed but its version did not.\n  got:      version {byhand.__version__} "
        f"ships {now}\n  expected: version {byhand.__version__} ships {recorded}\n  hint: make refresh bumps "
        "the version and records the new version's fingerprint in one step (make refresh BUMP=0: this "
        "version was never released, record its fingerprint instead)"
    )


def test_an_unchanged_rerun_says_nothing_changed_and_how_many_it_reused(tmp_path):
    from autograder.__main__ import done_line

    subs = _subs(tmp_path)
    _graded_once(tmp_path, subs)
    result = classroom.grade_class(tmp_path / "in", tmp_path / "out", workers=1, quiet=True)
    assert (result["graded_now"], result["reused"]) == (0, 4), (
        f"got {result['graded_now']} graded and {result['reused']} reused, expected 0 and 4"
    )
    line = done_line(result, tmp_path / "out")
    assert line.startswith("nothing changed: 0 graded, 4 reused"), f"got {line!r}"
    result["graded_now"], result["reused"] = 1, 3
    line = done_line(result, tmp_path / "out")
    assert line.startswith("graded 1 notebooks, 3 reused"), f"got {line!r}"
