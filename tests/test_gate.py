"""Does the gate fail fast on the breakage it must catch? A grader whose verdicts always pass fails
the loop (`make test-fast`'s selection), which `make test` runs before anything slow: in a copy of
the checkout with `judge/grade.py::verdict` planted to pass everything, the loop's verdict tests fail."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLANT = '    return "passed", "", ""  # planted by tests/test_gate.py: every verdict passes\n'


def _make_variable(name: str) -> str:
    """The value of a `NAME := ...` line of the Makefile."""
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line.startswith(f"{name} :="):
            return line.split(":=", 1)[1].strip()
    raise AssertionError(f"no {name} := in the Makefile")


def _marker_expression(name: str) -> str:
    found = re.fullmatch(r'-m "(.*)"', _make_variable(name))
    assert found, f"the Makefile's {name} is not one -m expression: {_make_variable(name)}"
    return found.group(1)


def test_the_gate_runs_the_loop_first_and_stops_when_it_fails():
    """`make test`: the loop's selection ($(FAST)) first, the rest only after it passed (`&&`)."""
    text = (ROOT / "Makefile").read_text()
    recipe = text[text.index("\ntest:") :].split("\n\n", 1)[0]
    first, _, after = recipe.partition("&&")
    assert "$(FAST)" in first and "$(REST)" in after, (
        f"got the recipe\n{recipe}\nexpected $(FAST) && ... $(REST)"
    )
    # together they select what the gate used to (everything not `full`), each test once
    rest = _marker_expression("REST")
    assert rest.startswith("not (full or fast) and ("), rest
    layers = set(rest.split(" and (", 1)[1].rstrip(")").split(" or "))
    fast_left_out = set(_marker_expression("FAST").removeprefix("not (").rstrip(")").split(" or "))
    assert layers == fast_left_out - {"full"}, (
        f"got {sorted(layers)}, expected {sorted(fast_left_out - {'full'})}"
    )


@pytest.mark.slow  # a copy of the checkout and a pytest process (about 15 s)
def test_a_grader_whose_verdicts_always_pass_fails_the_loop(tmp_path):
    """The planted grader, in a copy of the checkout: the loop's verdict tests fail, and fast."""
    copy = tmp_path / "checkout"
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / name.decode()
        if source.is_file():
            (copy / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name.decode())
    grade = copy / "autograder" / "judge" / "grade.py"
    text = grade.read_text()
    head = re.search(r"\ndef verdict\(.*\n(    \"\"\".*\"\"\"\n)", text)
    assert head, "autograder/judge/grade.py has no `def verdict(...)` with a one-line docstring"
    grade.write_text(text[: head.end()] + PLANT + text[head.end() :])
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:nbval", "-n", "0"]
        + ["-m", _marker_expression("FAST"), "tests/test_verdict.py"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = run.stdout + run.stderr
    assert str(copy) in _imported_grader(copy), "the copy's grader was not the one imported"
    assert run.returncode == 1 and re.search(r"\b1 failed\b", out), (
        f"got exit {run.returncode}, expected a failure:\n{out}"
    )


def _imported_grader(copy: Path) -> str:
    return subprocess.run(
        [sys.executable, "-c", "import autograder.judge.grade as g; print(g.__file__)"],
        cwd=copy,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


# ---------------------------------------------------------------------------------------------
# the catalogue's breadth the gate leaves out (tests/breadth.py): only a lesson recorded at its
# digest now, and the digest moves with every input of that lesson's tests


def test_a_lessons_breadth_digest_moves_with_its_inputs_only():
    import breadth

    lesson, other = "05_init", "02_layernorm"
    now = breadth.digest(lesson)
    own_check = next((ROOT / "student" / "byhand" / "init").glob("*.py"))
    shared = ROOT / "student" / "byhand" / "_core" / "judging.py"
    po = ROOT / "student" / "byhand" / "locale" / "zh_CN" / "LC_MESSAGES" / "byhand.po"
    for changed in (
        own_check,
        shared,
        po,
        ROOT / "examples" / "answers" / f"a{lesson}.py",
        ROOT / "autograder" / "judge" / "grade.py",
        ROOT / "tests" / "test_lessons.py",
        ROOT / "requirements.txt",
    ):
        moved = breadth.digest(lesson, {changed: changed.read_bytes() + b"\n# changed\n"})
        assert moved != now, f"changing {changed.relative_to(ROOT)} left {lesson}'s breadth digest as it was"
    # another lesson's checks and the notebook's outputs are no input of it
    other_check = next((ROOT / "student" / "byhand" / "layernorm").glob("*.py"))
    assert breadth.digest(lesson, {other_check: b"# changed\n"}) == now
    assert breadth.digest(other, {own_check: b"# changed\n"}) == breadth.digest(other)
    # a re-executed notebook (other outputs) is the same input; an edited cell is not
    notebook = ROOT / "solutions" / f"{lesson}.ipynb"
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["re-executed\n"]}]
    assert breadth.digest(lesson, {notebook: json.dumps(nb).encode()}) == now
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["source"] = ["x = 1\n", *code["source"]]
    assert breadth.digest(lesson, {notebook: json.dumps(nb).encode()}) != now
    # a version bump alone (make refresh's, for any lesson's change) leaves it; the rest of the file not
    init = ROOT / "student" / "byhand" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    bumped = re.sub(r'^__version__ = "[^"]+"', '__version__ = "99.0.0"', text, count=1, flags=re.M)
    assert bumped != text
    assert breadth.digest(lesson, {init: bumped.encode()}) == now
    assert breadth.digest(lesson, {init: (text + "\n# changed\n").encode()}) != now
    # a lesson's checks that run another lesson's code (13's moe_forward, 10's observer) depend on it
    observer = ROOT / "student" / "byhand" / "flash_attention" / "_shared.py"
    moe = "13_mixture_of_experts"
    assert breadth.digest(moe, {observer: observer.read_bytes() + b"\n# changed\n"}) != breadth.digest(moe)
    router = ROOT / "student" / "byhand" / "moe" / "route.py"
    flash = "10_flash_attention"
    assert breadth.digest(flash, {router: router.read_bytes() + b"\n# changed\n"}) == breadth.digest(flash)


def _collected(record: Path, lesson_filter: str) -> list[str]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:nbval",
            "--collect-only",
            "-m",
            "breadth and not full",
            "--skip-verified-breadth",
            "tests/test_lessons.py",
            "-k",
            lesson_filter,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "BREADTH_RECORD": str(record)},
    )
    assert out.returncode in (0, 5), out.stdout + out.stderr
    return [line for line in out.stdout.splitlines() if "::" in line]


@pytest.mark.slow  # two pytest collections (about 10 s)
def test_the_gate_leaves_out_a_lessons_breadth_only_at_its_recorded_digest(tmp_path):
    import breadth

    record = tmp_path / "breadth_verified.json"
    record.write_text(json.dumps({"05_init": breadth.digest("05_init"), "03_residual": "0" * 64}))
    ids = _collected(record, "05_init or 03_residual")
    assert not [i for i in ids if "[05_init-" in i], (
        f"05_init is recorded at its digest, yet collected: {ids}"
    )
    assert [i for i in ids if "[03_residual-" in i], (
        "03_residual's record is stale, yet its breadth was left out"
    )
    record.write_text("{}")
    assert [i for i in _collected(record, "05_init") if "[05_init-" in i], "no record, yet 05_init left out"


def test_the_gates_shared_class_grades_every_lessons_perfect_answer():
    """The gate grades part of the example class (tests/shared_class.py): is every lesson in it, with
    its perfect notebook, and does `make test` ask for that part (test-full for the whole)?"""
    from shared_class import EXPENSIVE, PERFECT, keeps_in_gate

    from autograder import course
    from examples.build import CLASS

    lessons = course.lessons()
    assert set(EXPENSIVE) <= set(lessons), f"got {sorted(set(EXPENSIVE) - set(lessons))}, expected lessons"
    for lesson in lessons:
        assert (CLASS / PERFECT / f"{lesson}.ipynb").exists(), f"{PERFECT} has no {lesson} notebook"
        assert keeps_in_gate(PERFECT, lesson)
    cheap = [lesson for lesson in lessons if lesson not in EXPENSIVE]
    assert len(cheap) >= len(lessons) // 2, f"got {cheap}, expected most lessons graded whole in the gate"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    test_recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "--shared-class=gate" in test_recipe
    full_recipe = makefile.split("\ntest-full:", 1)[1].split("\n\n", 1)[0]
    assert "--shared-class" not in full_recipe  # the default: the whole class
