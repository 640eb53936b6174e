"""What a failed self-check looks like in a notebook: run as a kernel runs a cell (IPython's
InteractiveShell; the lines checked are the `traceback` of the error message ipykernel sends, which
JupyterLab, classic Notebook, VS Code and Colab all show), it is the message alone, at most 12 lines
and no line of the checks package; `check(..., traceback=True)` (or `byhand.verbose(True)`) gives
IPython's whole traceback, the student's own error included; the cell still fails (Run All stops),
and plain Python still prints the whole traceback."""

from __future__ import annotations

import re
import subprocess
import sys

import byhand
import pytest
from byhand import i18n

from autograder import course
from examples import answers_for, lessons_with_answers

ANSI = re.compile(r"\x1b\[[0-9;]*m")
PACKAGE = "byhand" + "/"  # a path inside the checks package, as a traceback names its files
MAX_LINES = 12

EXPAND = """
class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        h = torch.relu(self.w1(x))
        h = h.expand(3, 5, 9)
        return self.w2(self.dropout(h))
"""


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    sh.shown = []
    # what ipykernel sends as the error's `traceback` (ZMQInteractiveShell._showtraceback)
    sh._showtraceback = lambda etype, evalue, stb: sh.shown.append(ANSI.sub("", "\n".join(stb)))
    yield sh
    i18n.language("en")
    byhand.verbose(False)


def _run_lesson(sh, lesson: str, cells: dict) -> None:
    """The lesson's setup cells and answer cells (`cells` in place of the answers they name), one
    cell at a time as a notebook runs them."""
    sh.reset()
    for cell in course.read_solution(lesson).cells:
        meta = course.nbgrader_meta(cell)
        if cell.cell_type != "code" or not (meta.get("solution") or "setup" in course.tags(cell)):
            continue
        result = sh.run_cell(cells.get(meta.get("grade_id"), cell.source))
        assert result.success, f"{lesson}: a setup or answer cell failed: {result.error_in_exec!r}"


def _shown(sh, source: str) -> str:
    sh.shown.clear()
    result = sh.run_cell(source)
    assert not result.success, "the failing check did not fail its cell: Run All would go on"
    assert isinstance(result.error_in_exec, AssertionError)
    assert len(sh.shown) == 1, f"got {len(sh.shown)} tracebacks shown"
    return sh.shown[0]


def _sample():
    """The first catalogued mistake of each lesson."""
    out = []
    for lesson in lessons_with_answers():
        name, spec = next(iter(answers_for(lesson).MISTAKES.items()))
        out.append(pytest.param(lesson, spec, id=f"{lesson}-{name}"))
    return out


@pytest.mark.full  # every lesson's setup in IPython; the gate renders every mistake (test_lessons.py)
@pytest.mark.parametrize("lesson, spec", _sample())
def test_a_failed_check_shows_its_message_only(shell, lesson, spec):
    _run_lesson(shell, lesson, spec["cells"])
    call = f"checks.check({spec['question']!r}, globals(), hidden=True)"
    short = _shown(shell, call)
    lines = short.splitlines()
    assert len(lines) <= MAX_LINES, f"got {len(lines)} lines, expected at most {MAX_LINES}:\n{short}"
    assert PACKAGE not in short and "Traceback" not in short, f"a frame of the checks package:\n{short}"
    words = (spec["hint"],) if isinstance(spec["hint"], str) else tuple(spec["hint"])
    assert all(w in short for w in words) and "traceback=True" in lines[-1], short
    full = _shown(shell, call.replace("hidden=True", "hidden=True, traceback=True"))
    assert PACKAGE + "_core/" in full and "Traceback" in full, f"expected the whole traceback:\n{full}"
    assert len(full.splitlines()) > len(lines)


def test_the_students_own_error_shows_their_line_and_what_it_means(shell):
    _run_lesson(shell, "03_residual", {"PositionwiseFeedForward_answer": EXPAND})
    short = _shown(shell, 'checks.check("PositionwiseFeedForward", globals())')
    assert len(short.splitlines()) <= MAX_LINES and PACKAGE not in short, short
    assert "h = h.expand(3, 5, 9)" in short and re.search(r"in your code: Cell In\[\d+\], line 10", short), (
        f"expected the line of the student's cell that raised:\n{short}"
    )
    assert "expand can only stretch a dimension of size 1" in short, short
    assert "the error: RuntimeError: The expanded size" in short, "the original error is kept"
    full = _shown(shell, 'checks.check("PositionwiseFeedForward", globals(), traceback=True)')
    assert "---> 10 h = h.expand(3, 5, 9)" in full and "direct cause" in full, full
    byhand.verbose(True)
    try:
        assert PACKAGE + "_core/" in _shown(shell, 'checks.check("PositionwiseFeedForward", globals())')
    finally:
        byhand.verbose(False)
    i18n.language("zh_CN")
    try:
        zh = _shown(shell, 'checks.check("PositionwiseFeedForward", globals())')
    finally:
        i18n.language("en")
    assert (
        "expand 只能把大小为 1 的维度扩展开" in zh and "你的代码：Cell In[" in zh and "完整的 traceback" in zh
    ), zh


@pytest.mark.slow  # a fresh interpreter imports torch: about 3 s of CPU
def test_plain_python_still_prints_the_whole_traceback(tmp_path):
    """Without IPython nothing renders the short form: the exception propagates as any other."""
    script = tmp_path / "student.py"
    script.write_text(
        "import torch\nimport byhand.attention as checks\n"
        "def scaled_dot_product_attention(q, k, v, mask=None):\n    return q\n"
        "checks.check('scaled_dot_product_attention', globals())\n",
        encoding="utf-8",
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "Traceback (most recent call last)" in run.stderr, run.stderr
    assert re.search(r"byhand\._core\.failures\.\w+: scaled_dot_product_attention", run.stderr), run.stderr


@pytest.mark.slow  # starts an ipykernel: about 4.5 s of CPU
def test_a_real_kernel_sends_the_message_as_the_traceback():
    """Through ipykernel (nbclient), as JupyterLab, Notebook, VS Code and Colab receive it: the error
    output's traceback is the message, nothing on stderr (nbgrader zeroes a test cell that writes
    there), and the cell fails with an error output (where Run All stops)."""
    import nbclient
    import nbformat

    lesson = "03_residual"
    spec = next(iter(answers_for(lesson).MISTAKES.values()))
    cells = []
    for cell in course.read_solution(lesson).cells:
        meta = course.nbgrader_meta(cell)
        if cell.cell_type == "code" and (meta.get("solution") or "setup" in course.tags(cell)):
            cells.append(nbformat.v4.new_code_cell(spec["cells"].get(meta.get("grade_id"), cell.source)))
    cells.append(nbformat.v4.new_code_cell(f"checks.check({spec['question']!r}, globals())"))
    cells.append(nbformat.v4.new_code_cell("print('after the failing check')"))
    nb = nbformat.v4.new_notebook(cells=cells)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True)
    client.execute(cwd=str(course.ROOT))
    errors = [(i, o) for i, c in enumerate(nb.cells) for o in c.outputs if o.output_type == "error"]
    assert [i for i, _ in errors] == [len(cells) - 2], f"got errors in cells {[i for i, _ in errors]}"
    error = errors[0][1]
    shown = ANSI.sub("", "\n".join(error.traceback))
    assert error.ename == "CheckFailure" and error.evalue.startswith(spec["question"]), error
    assert len(shown.splitlines()) <= MAX_LINES and PACKAGE not in shown, shown
    assert spec["hint"] in shown, shown
    assert not [o for o in nb.cells[-2].outputs if o.get("name") == "stderr"], "stderr in the test cell"
