"""Which of a lesson's own plain cells grading leaves out (autograder/run/prune.py): only those
nothing that runs reads, and nothing when the notebook reaches names by string."""

import nbformat
import pytest

from autograder.run.prune import skippable

SETUP = "import torch\nimport math\n"


def _cell(source, cid, **nbgrader):
    cell = nbformat.v4.new_code_cell(source)
    cell["id"] = cid
    if nbgrader:
        cell.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": False, **nbgrader}
    return cell


def _lesson(*plain):
    """A lesson: setup, the plain cells given, an answer `f` and its test cell."""
    setup = _cell(SETUP, "setup")
    setup.metadata["tags"] = ["setup"]
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        setup,
        *[_cell(src, f"plain-{i}") for i, src in enumerate(plain)],
        _cell("def f(x):\n    return x", "f_answer", solution=True, grade_id="f_answer"),
        _cell('checks.check("f", globals())', "f", grade=True, grade_id="f", points=1),
    ]
    return nb


def _left_out(source_nb, student_nb=None, needed=("f",)):
    student_nb = student_nb or source_nb
    return {student_nb.cells[i].source for i in skippable(student_nb, set(), source_nb, set(needed))}


def test_a_worked_example_nothing_reads_is_left_out():
    demo = "g = torch.Generator().manual_seed(0)\nq = torch.randn(3, generator=g)\nprint(q.sum())"
    assert _left_out(_lesson(demo)) == {demo}, "a worked example on its own data is not needed at grading"


def test_a_helper_an_answer_calls_runs():
    helper = "def helper(x):\n    return 2 * x"
    nb = _lesson(helper)
    nb.cells[2].source = "def f(x):\n    return helper(x)"
    assert _left_out(nb) == set(), "got the helper left out, expected it kept: the answer calls it"


def test_a_name_the_checks_look_up_is_kept():
    given = "class Given:\n    pass"
    assert _left_out(_lesson(given), needed=("f", "Given")) == set()


def test_what_a_kept_cell_reads_is_kept_too():
    data = "W = torch.ones(3)"
    uses = "def helper(x):\n    return W * x"
    nb = _lesson(data, uses)
    nb.cells[3].source = "def f(x):\n    return helper(x)"
    assert _left_out(nb) == set(), "got a cell left out whose W the kept helper reads"


def test_a_cell_that_changes_what_a_later_cell_reads_runs():
    make = "table = {}"
    fill = "table['k'] = 1"  # changes `table` in place: the answer reads it
    nb = _lesson(make, fill)
    nb.cells[3].source = "def f(x):\n    return x + table['k']"
    assert _left_out(nb) == set()


@pytest.mark.parametrize(
    "state",
    ["torch.manual_seed(0)", "torch.set_default_dtype(torch.float64)", "torch.set_printoptions(precision=3)"],
)
def test_a_cell_that_changes_global_state_runs(state):
    assert _left_out(_lesson(state)) == set(), f"got {state!r} left out, expected it run"


def test_a_cell_the_student_changed_runs():
    demo = "q = torch.randn(3)\nprint(q)"
    source = _lesson(demo)
    student = _lesson(demo + "\nprint('mine')")
    assert _left_out(source, student) == set(), "a changed cell is the student's: it runs"


@pytest.mark.parametrize(
    "reach",
    ["globals()['q']", "eval('q')", "exec('print(q)')", "get_ipython().user_ns['q']", "from os import *"],
)
def test_a_notebook_that_reaches_names_by_string_runs_everything(reach):
    demo = "q = torch.randn(3)"
    source = _lesson(demo)
    student = _lesson(demo)
    student.cells[2].source = f"def f(x):\n    return x\n\nprint({reach!r})\n{reach}"
    assert _left_out(source, student) == set(), f"got cells left out although the answer does {reach}"


def test_a_cell_that_cannot_be_parsed_runs():
    magic = "%timeit torch.randn(3)"
    assert _left_out(_lesson(magic)) == set()
    student = _lesson("q = 1")
    student.cells[2].source = "%time\ndef f(x):\n    return x"
    assert _left_out(_lesson("q = 1"), student) == set(), "a student's magic: nothing is left out"
