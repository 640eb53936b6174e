"""`python -m autograder new-exercise LESSON NAME --points N`: a new graded exercise, in place.

It writes a placeholder exercise that is whole and passes (`NAME(x)` returns `2 * x`), in every file
an exercise lives in, so that `make refresh` right after it leaves a consistent tree and the author
replaces the placeholder file by file (docs/authoring-lessons.md):

- `solutions/LESSON.ipynb`: the answer cell `NAME_answer` (the reference between `### BEGIN SOLUTION`
  / `### END SOLUTION`) and the self-check cell `NAME` (N points, hidden checks included), right
  after the lesson's last self-check;
- `student/byhand/<topic>/NAME.py`: its reference, one case and its judge, with one catalogued
  mistake; `student/byhand/<topic>/__init__.py`: its `Question` in `QUESTIONS`;
- `student/byhand/locale/zh_CN/LC_MESSAGES/byhand.po`: the mistake's hint as a message id with a
  Chinese stub marked fuzzy (not compiled, and `tests/test_po_catalogues.py` fails until it is written);
- `examples/answers/aNN_topic.py`: its right answer, the mistake (MISTAKES), its points (MAX,
  EXPECTED: the student who answers everything right answers it right too).

It refuses, changing nothing, an unknown lesson, a name the lesson or the package already has, a
name that is not a function's in snake_case, and fewer than 1 point.
"""

from __future__ import annotations

import ast
import keyword
import re
import subprocess
import sys
from pathlib import Path

import nbformat
from babel.messages.catalog import Message

from autograder import course

ROOT = course.ROOT
STUDENT = ROOT / "student" / "byhand"
ANSWERS = ROOT / "examples" / "answers"
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
FUZZY_NOTE = "new-exercise: write the Chinese, then delete the fuzzy flag (make refresh compiles it)"
STUB_PREFIX = "（待译）"


class Refused(ValueError):
    """The scaffold cannot make this exercise: why, in a sentence."""


def hint_id(name: str) -> str:
    """The placeholder mistake's hint (a catalogue id): replace it with the real mistake's."""
    return f"{name} returned its input unchanged: it should return twice the input"


def answer_cell(name: str) -> str:
    return f"def {name}(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"


def test_cell(name: str) -> str:
    return (
        f'checks.check("{name}", globals())\n'
        "### BEGIN HIDDEN TESTS\n"
        f'checks.check("{name}", globals(), hidden=True)\n'
        "### END HIDDEN TESTS"
    )


def check_module(lesson: str, name: str) -> str:
    return f'''"""Lesson {lesson}, `{name}`: its reference, its cases, its mistakes and its judge."""

from __future__ import annotations

import torch

from .._core import Case, calling
from .._judge import assert_close, diagnose, expect_tensor
from ..i18n import N_


def ref_{name}(x: torch.Tensor) -> torch.Tensor:
    """The reference answer."""
    return 2 * x


def _{name}_cases(hidden):
    """One case: random inputs, every dim different, mean not 0, std not 1 (hidden: another seed)."""
    g = torch.Generator().manual_seed(1 if hidden else 0)
    x = torch.randn(3, 5, generator=g, dtype=torch.float64) * 2.5 + 0.5
    return [Case(f"x {{tuple(x.shape)}} float64", calling("y", "{name}", {{"x": x}}), ["y"], facts=dict(x=x), size=1)]


def _{name}_judge(case, out):
    x = case.facts["x"]
    y = expect_tensor(out["y"], "{name}(x)", shape=tuple(x.shape))
    hint = diagnose(y, [(N_("{hint_id(name)}"), lambda: x)])
    assert_close(y, ref_{name}(x), "{name}", hint)
'''


def answers_block(lesson: str, name: str, points: int) -> str:
    upper = name.upper()
    return f'''

# {name} (python -m autograder new-exercise {lesson} {name} --points {points}): its right answer,
# its catalogued mistakes and its points; only the student who answers everything right answers it
{upper}_OK = """
def {name}(x):
    return 2 * x
"""
ALL_OK["{name}_answer"] = {upper}_OK
MISTAKES["{name}_input_unchanged"] = dict(
    cells={{"{name}_answer": {upper}_OK.replace("return 2 * x", "return x")}},
    question="{name}",
    hint="unchanged",
)
MAX["{name}"] = {points}
for _student, _points in EXPECTED.items():
    _points["{name}"] = MAX["{name}"] if STUDENTS[_student] is ALL_OK else 0
'''


def _package(lesson: str) -> Path:
    import byhand

    return STUDENT / byhand.LESSONS[lesson]


def refusal(lesson: str, name: str, points: int) -> str | None:
    """Why this exercise cannot be made (None: it can)."""
    import byhand

    known = sorted(byhand.LESSONS)
    if lesson not in byhand.LESSONS or not (course.SOLUTIONS / f"{lesson}.ipynb").exists():
        return f"unknown lesson {lesson!r}: expected one of {', '.join(known)}"
    if not NAME.match(name) or keyword.iskeyword(name) or name.endswith("_answer"):
        return (
            f"bad name {name!r}: expected a function's name in snake_case (a-z, 0-9 and _, starting "
            "with a letter, not a Python keyword, not ending in _answer); a class exercise starts as "
            "a function too: docs/authoring-lessons.md"
        )
    if points < 1:
        return f"--points {points}: an exercise is worth at least 1 point"
    pkg = _package(lesson)
    questions = byhand.for_lesson(lesson).QUESTIONS
    ids = {c.get("id") for c in course.read_solution(lesson).cells}
    ids |= {course.nbgrader_meta(c).get("grade_id") for c in course.read_solution(lesson).cells}
    module = pkg / f"{name}.py"
    for taken, where in (
        (name in questions, f"a question of {pkg.name}/__init__.py"),
        (name in ids or f"{name}_answer" in ids, f"a cell of solutions/{lesson}.ipynb"),
        (module.exists(), str(module.relative_to(ROOT))),
        (f"{name}_answer" in _answers_module(lesson).ALL_OK, f"an answer of {_answers_path(lesson).name}"),
    ):
        if taken:
            return f"the name {name!r} is taken: {where}"
    return None


def _answers_path(lesson: str) -> Path:
    return ANSWERS / f"a{lesson}.py"


def _answers_module(lesson: str):
    from autograder.tooling.checkout import examples

    examples()
    from examples import answers_for

    return answers_for(lesson)


def _last_self_check(nb) -> int:
    """The index of the lesson's last graded code cell (the new exercise goes right after it)."""
    graded = [
        i for i, c in enumerate(nb.cells) if c.cell_type == "code" and course.nbgrader_meta(c).get("grade")
    ]
    return graded[-1] if graded else len(nb.cells) - 1


def _new_cell(source: str, grade_id: str, grade: bool, points: int = 0):
    cell = nbformat.v4.new_code_cell(source)
    meta = {"grade": grade, "grade_id": grade_id, "locked": grade}
    if grade:
        meta["points"] = points
    cell.metadata["nbgrader"] = {**meta, "schema_version": 3, "solution": not grade, "task": False}
    cell["id"] = grade_id
    return cell


def add_cells(lesson: str, name: str, points: int) -> Path:
    path = course.SOLUTIONS / f"{lesson}.ipynb"
    nb = nbformat.read(path, as_version=4)
    at = _last_self_check(nb) + 1
    nb.cells[at:at] = [
        _new_cell(answer_cell(name), f"{name}_answer", False),
        _new_cell(test_cell(name), name, True, points),
    ]
    nbformat.write(nb, path)
    return path


def register(lesson: str, name: str) -> Path:
    """Import the exercise's cases and judge in the lesson's `__init__.py` and add its Question."""
    path = _package(lesson) / "__init__.py"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    tree = ast.parse("".join(lines))
    call = next(
        n.value
        for n in tree.body
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "QUESTIONS" for t in n.targets)
    )
    # the closing parenthesis of QUESTIONS = _core.by_name(...)
    close = call.end_lineno - 1
    lines.insert(close, f'    Question("{name}", _{name}_cases, _{name}_judge),\n')
    # the import, among the lesson's own (`from .x import ...`), in the order ruff's isort keeps
    own = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module is not None]
    line = f"from .{name} import _{name}_cases, _{name}_judge\n"
    after = [n for n in own if n.module.lower() > name.lower()]
    if after:
        lines.insert(after[0].lineno - 1, line)
    else:
        last = max(
            (n.end_lineno for n in own),
            default=max(n.end_lineno for n in tree.body if isinstance(n, ast.ImportFrom)),
        )
        lines.insert(last, line)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def add_message(name: str) -> Path:
    """The hint's id in the Chinese catalogue: a stub marked fuzzy, for a translator to write."""
    from autograder.tooling import messages

    path = messages.po_path("zh_CN")
    cat = messages.read("zh_CN")
    mid = hint_id(name)
    if mid not in cat:
        cat[mid] = Message(mid, f"{STUB_PREFIX}{mid}", flags={"fuzzy"}, user_comments=[FUZZY_NOTE])
    path.write_bytes(messages.po_bytes(cat))
    return path


def _ruff(paths: list) -> None:
    """Let ruff order and format the Python written (when the venv has it): what `make lint` checks."""
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        return
    files = [str(p) for p in paths]
    subprocess.run([str(ruff), "check", "-q", "--fix", "--select", "I", *files], check=False)
    subprocess.run([str(ruff), "format", "-q", *files], check=False)


def new_exercise(lesson: str, name: str, points: int) -> list[Path]:
    """Write the exercise; the files written. Raises Refused (nothing written) when it cannot."""
    why = refusal(lesson, name, points)
    if why:
        raise Refused(why)
    module = _package(lesson) / f"{name}.py"
    module.write_text(check_module(lesson, name), encoding="utf-8")
    init = register(lesson, name)
    answers = _answers_path(lesson)
    with open(answers, "a", encoding="utf-8") as f:
        f.write(answers_block(lesson, name, points))
    _ruff([module, init, answers])
    return [add_cells(lesson, name, points), module, init, add_message(name), answers]


NEXT = """\
A placeholder exercise ({name}(x) returns 2 * x) is in place and passes. Replace it (docs/authoring-lessons.md):
  solutions/{lesson}.ipynb             the answer cell {name}_answer: the signature and the reference answer
  student/byhand/<topic>/{name}.py     ref_{name}, the cases, the mistakes' hints and the judge
  student/byhand/locale/zh_CN/LC_MESSAGES/byhand.po   each new hint's Chinese (then drop its fuzzy flag)
  examples/answers/a{lesson}.py        {NAME}_OK and the MISTAKES entries
then: make refresh"""
