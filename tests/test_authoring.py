"""Does the percent-script format give the nbgrader cells a lesson needs, with stable ids? Does
the guide (docs/authoring-lessons.md) add an exercise that passes, and does the scaffold refuse what
it cannot make?"""

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import course
from autograder.tooling.authoring import parse

LESSON = """\
# %% [markdown]
# # Title
#
# Some $x$.

# %% [setup]
import torch

# %% [answer] id=f_answer
def f(x):
    ### BEGIN SOLUTION
    return x
    ### END SOLUTION

# %% [tests] id=f points=2
checks.check("f", globals())

# %% [demo]
print("plot")

# %%
y = 1
"""


def test_roles_become_nbgrader_metadata_and_tags():
    """Are answer, tests, setup and demo cells marked the way nbgrader and the grader read them?"""
    cells = parse(LESSON).cells
    kinds = [c.cell_type for c in cells]
    assert kinds == ["markdown", "code", "code", "code", "code", "code"]
    md, setup, answer, tests, demo, plain = cells
    assert md.source == "# Title\n\nSome $x$."
    assert setup.metadata["tags"] == ["setup"] and demo.metadata["tags"] == ["demo"]
    assert answer.metadata["nbgrader"]["solution"] is True and answer.metadata["nbgrader"]["grade"] is False
    assert tests.metadata["nbgrader"] == {
        "grade": True,
        "grade_id": "f",
        "locked": True,
        "points": 2,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    assert "nbgrader" not in plain.metadata and "tags" not in plain.metadata


def test_ids_are_stable_across_runs():
    """Does parsing twice give the same cell ids (graded ones named after their grade_id)?"""
    ids = [c["id"] for c in parse(LESSON).cells]
    assert ids == [c["id"] for c in parse(LESSON).cells]
    assert ids[2:4] == ["f_answer", "f"] and ids[0] == "cell-000"


def test_text_before_the_first_header_is_ignored():
    """Is a preamble above the first `# %%` left out of the notebook?"""
    nb = parse("preamble = 1\n" + LESSON)
    assert "preamble" not in "".join(c.source for c in nb.cells)


# ---------------------------------------------------------------------------------------------
# docs/authoring-lessons.md, followed literally in a clone


def guide_blocks(text: str) -> list:
    """(language, body) of each fenced block of the guide's section on adding an exercise, in order."""
    section = text.split("## Adding an exercise", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```(\w+)\n(.*?)^```$", section, re.M | re.S)


def _apply(block: str, clone: Path) -> None:
    """Put a `python` block where its first line says: a notebook's cell, the end of a file from a
    marker on, or a whole file."""
    first, body = block.split("\n", 1)
    where = first.removeprefix("# ")
    if ", cell " in where:
        path, cell_id = where.split(", cell ")
        nb = nbformat.read(clone / path, as_version=4)
        (cell,) = [c for c in nb.cells if c.get("id") == cell_id]
        cell.source = body.strip("\n")
        nbformat.write(nb, clone / path)
    elif ", from " in where:
        path, marker = re.fullmatch(r'(.*), from "(.*)" to the end', where).groups()
        text = (clone / path).read_text(encoding="utf-8")
        assert marker in text, f"got no {marker!r} in {path}, expected the scaffold's block"
        (clone / path).write_text(text[: text.index(marker)] + body, encoding="utf-8")
    else:
        (clone / where).write_text(body, encoding="utf-8")


def _apply_po(block: str, clone: Path) -> None:
    """A `po` block in place of the scaffold's fuzzy stub (the entry whose comment says new-exercise)."""
    from autograder.tooling.scaffold import FUZZY_NOTE

    path = clone / "student/byhand/locale/zh_CN/LC_MESSAGES/byhand.po"
    entries = path.read_text(encoding="utf-8").split("\n\n")
    kept = [e for e in entries if FUZZY_NOTE not in e]
    assert len(kept) == len(entries) - 1, "got no fuzzy stub of the scaffold in byhand.po, expected one"
    path.write_text("\n\n".join(kept).rstrip("\n") + "\n\n" + block, encoding="utf-8")


def _venv_shim(venv: Path, shim: Path) -> None:
    """The clone's `.venv`: the running venv's files through links (PYTHONPATH puts the clone's
    packages first), with stamps of its own dated in the future, so that no `make` target there
    reinstalls anything into the running venv (`make refresh` bumps student/pyproject.toml)."""
    shim.mkdir()
    for stamp in (".installed", ".installed-grade", ".installed-site", ".installed-cluster"):
        (shim / stamp).touch()
        os.utime(shim / stamp, (4102444800, 4102444800))  # 2100-01-01
    for entry in venv.iterdir():
        if entry.name.startswith(".installed"):
            continue
        if entry.name == "pyvenv.cfg":  # read beside the interpreter: sys.prefix is the shim
            (shim / entry.name).write_bytes(entry.read_bytes())
        else:
            (shim / entry.name).symlink_to(entry)


@pytest.mark.slow
@pytest.mark.full  # minutes: the clone's refresh executes the lesson, then its tests and nbval run
def test_a_new_exercise_from_the_guide(tmp_path):
    """Does docs/authoring-lessons.md, followed block by block in a clone (scaffold, the answer, the
    check, its Chinese, the example answers, `make refresh`, the lesson's tests), end green?"""
    venv = Path(sys.prefix)
    if not (venv / "pyvenv.cfg").exists():
        pytest.skip(f"{venv} is not a venv: the guide's commands run .venv/bin/python")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(course.ROOT), str(clone)], check=True)
    _venv_shim(venv, clone / ".venv")
    env = {**os.environ, "PYTHONPATH": f"{clone / 'student'}{os.pathsep}{clone}", "PYTHONUNBUFFERED": "1"}
    blocks = guide_blocks((course.ROOT / "docs" / "authoring-lessons.md").read_text(encoding="utf-8"))
    assert [lang for lang, _ in blocks].count("sh") >= 3, f"got blocks {[b[0] for b in blocks]}"
    log = []
    for lang, body in blocks:
        if lang == "sh":
            for command in filter(None, body.splitlines()):
                done = subprocess.run(command, shell=True, cwd=clone, env=env, capture_output=True, text=True)
                log.append(f"$ {command}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
                assert done.returncode == 0, (
                    f"got exit {done.returncode} from the guide's `{command}`, expected 0:\n" + "\n".join(log)
                )
        elif lang == "python":
            _apply(body, clone)
        elif lang == "po":
            _apply_po(body, clone)
    refreshed = "\n".join(line for line in log if line.startswith("$ make refresh"))
    assert refreshed, "got no `make refresh` in the guide, expected one"
    # what make refresh said it redid: the lesson executed and released, the version recorded
    said = "\n".join(log)
    for expected in ("executed solutions/05_init.ipynb", "wrote notebooks/zh_CN/05_init.ipynb", "recorded"):
        assert expected in said, f"got no {expected!r} in what the guide's commands printed:\n{said}"


@pytest.mark.parametrize(
    "lesson,name,points,expected",
    [
        ("99_nothing", "rms", 1, "unknown lesson"),
        ("05_init", "init_std", 1, "is taken"),
        ("05_init", "init_linear_", 2, "is taken"),
        ("05_init", "RMS", 1, "bad name"),
        ("05_init", "2rms", 1, "bad name"),
        ("05_init", "lambda", 1, "bad name"),
        ("05_init", "rms_answer", 1, "bad name"),
        ("05_init", "rms", 0, "at least 1 point"),
    ],
)
def test_the_scaffold_refuses_what_it_cannot_make(lesson, name, points, expected, capsys):
    """Does `new-exercise` exit non-zero with a sentence, writing nothing, on an unknown lesson, a
    taken name, a bad name and fewer than 1 point (the refusal comes before any write)?"""
    from autograder.__main__ import main

    before = subprocess.run(
        ["git", "-C", str(course.ROOT), "status", "--porcelain"], capture_output=True, text=True
    )
    rc = main(["new-exercise", lesson, name, "--points", str(points)])
    err = capsys.readouterr().err
    after = subprocess.run(
        ["git", "-C", str(course.ROOT), "status", "--porcelain"], capture_output=True, text=True
    )
    assert rc == 2 and expected in err and "nothing written" in err, (
        f"got exit {rc}: {err!r}, expected 2: {expected}"
    )
    assert before.stdout == after.stdout, f"got changes {after.stdout!r}, expected none"


def test_a_right_name_is_not_refused():
    """Is a new snake_case name of a known lesson with 1 point accepted (the refusals can fail)?"""
    from autograder.tooling.scaffold import refusal

    assert refusal("05_init", "rms", 1) is None


def test_refresh_bumps_the_version_once_and_records_the_fingerprint_after_the_bump(tmp_path, monkeypatch):
    """In a repository whose checks changed: one refresh bumps 0.3.0 to 0.3.1 and records the
    fingerprint the bumped package has (one round, not two); another change before the commit
    updates 0.3.1's line without bumping again; BUMP=0 records the current version."""
    from autograder.tooling import refresh

    pkg = tmp_path / "student" / "byhand"
    (pkg / "data").mkdir(parents=True)
    (pkg / "data" / "README.md").write_text("data\n")
    (pkg / "__init__.py").write_text('__version__ = "0.3.0"  # byhand\n')
    (tmp_path / "student" / "pyproject.toml").write_text('[project]\nversion = "0.3.0"\n')
    regrade = tmp_path / "tests" / "test_regrade.py"
    regrade.parent.mkdir()
    monkeypatch.setattr(refresh, "ROOT", tmp_path)
    monkeypatch.setattr(refresh, "STUDENT", pkg)
    monkeypatch.setattr(refresh, "REGRADE", regrade)
    regrade.write_text(f'CHECKS_FINGERPRINTS = {{\n    "0.3.0": "{refresh.checks_fingerprint(pkg)}",\n}}\n')
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "0.3.0"], check=True)
    assert refresh.version_and_fingerprint() == []  # nothing changed: nothing said, nothing written

    (pkg / "new.py").write_text("X = 1\n")
    said = refresh.version_and_fingerprint()
    recorded = refresh.recorded_fingerprints()
    assert '__version__ = "0.3.1"' in (pkg / "__init__.py").read_text(), said
    assert 'version = "0.3.1"' in (tmp_path / "student" / "pyproject.toml").read_text()
    assert recorded.get("0.3.1") == refresh.checks_fingerprint(pkg) and "0.3.0" in recorded, (
        f"got {recorded}, expected 0.3.1 recorded as {refresh.checks_fingerprint(pkg)} beside 0.3.0"
    )

    (pkg / "new.py").write_text("X = 2\n")  # 0.3.1 is not committed: its line is updated, no 0.3.2
    refresh.version_and_fingerprint()
    recorded = refresh.recorded_fingerprints()
    assert sorted(recorded) == ["0.3.0", "0.3.1"] and recorded["0.3.1"] == refresh.checks_fingerprint(pkg), (
        f"got {recorded}, expected 0.3.1's line updated"
    )

    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "0.3.1"], check=True)
    (pkg / "new.py").write_text("X = 3\n")
    refresh.version_and_fingerprint(allow_bump=False)  # BUMP=0
    recorded = refresh.recorded_fingerprints()
    assert sorted(recorded) == ["0.3.0", "0.3.1"] and recorded["0.3.1"] == refresh.checks_fingerprint(pkg), (
        f"got {recorded}, expected 0.3.1 re-recorded without a bump"
    )


def test_the_committed_tree_is_refreshed():
    """refresh.json's digests match what every step's inputs are now: nothing derived is stale (a
    check committed without `make refresh` fails here, naming the step to redo)."""
    from autograder.tooling import refresh

    recorded = refresh.read_digests()
    stale = [
        s.name
        for s in refresh.steps(course.lessons())
        if recorded.get(s.name) != refresh.digest(s.inputs(), s.extra())
    ]
    assert not stale, f"got stale steps {stale}, expected none: run `make refresh` and commit what it wrote"


def test_a_merged_check_without_refresh_is_stale(tmp_path, monkeypatch):
    """After a merge, every input is as committed; the step is still stale when its inputs differ
    from its digest (before refresh.json, a worktree without build/ stamps called it fresh)."""
    from autograder.tooling import refresh

    (tmp_path / "checks.py").write_text("X = 1\n")
    monkeypatch.setattr(refresh, "ROOT", tmp_path)
    monkeypatch.setattr(refresh, "DIGESTS", tmp_path / "refresh.json")
    step = refresh.Step("execute-x", lambda: [tmp_path / "checks.py"], lambda: ["ran"])
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    step.done()
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "refreshed"], check=True)
    assert step.fresh(), "got stale, expected fresh: nothing changed since the step was done"

    (tmp_path / "checks.py").write_text("X = 2\n")  # the branch's change, committed without a refresh
    subprocess.run([*git, "commit", "-qam", "merged"], check=True)
    assert not step.fresh(), "got fresh, expected stale: the check changed after the step was done"
    step.done()
    assert step.fresh()

    # a step with no digest (a new lesson's notebook, committed before its first refresh) is stale
    new = refresh.Step("execute-new", lambda: [tmp_path / "checks.py"], lambda: ["ran"])
    assert not new.fresh(), "got fresh, expected stale: the step was never done"

    (tmp_path / "refresh.json").write_text("<<<<<<< ours\n{}\n=======\n{}\n>>>>>>> theirs\n")
    with pytest.raises(SystemExit, match="merge conflict"):
        step.fresh()
