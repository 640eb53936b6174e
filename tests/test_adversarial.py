"""Can a submission cheat, break the grader, or get lost? A catalogue of attacks and broken files,
each with the most it may score: what its honest part earns (lesson 01_attention, 10 points).

The grader is not a filter for these tricks: every point is decided by the trusted check (inputs
chosen by the grader, results sent back as raw numbers, compared in the grader's process), code runs
in a sandbox, and test cells come from the source notebook. So the catalogue also stands for
attacks it does not name.
"""

import copy
import json
from pathlib import Path

import byhand
import nbformat
import pytest

from autograder import sandbox
from autograder.classroom import grade_class
from autograder.examples import answers_for
from autograder.examples.build import fill

LESSON = "01_attention"
A = answers_for(LESSON)
OK = A.ALL_OK
BLANK = {}
WRONG_SDPA = A.MISTAKES["no_scaling"]["cells"]
BYHAND = Path(byhand.__file__).resolve().parent
# What a lesson's setup cell defines when the package is missing: a stand-in that never raises.
STAND_IN = "class checks:\n    def check(name, *args, **kwargs):\n        print(name, 'self-checks are off')"


def cell(code):
    return nbformat.v4.new_code_cell(code)


def with_cells(cells, extra, where="after_setup"):
    """The student notebook with answers `cells`, plus code cells `extra` inserted."""
    nb = fill(LESSON, cells)
    idx = 1 + next(i for i, c in enumerate(nb.cells) if "setup" in c.get("metadata", {}).get("tags", []))
    if where == "before_setup":
        idx -= 1
    if where == "end":
        idx = len(nb.cells)
    for j, code in enumerate(extra):
        nb.cells.insert(idx + j, cell(code))
    return nb


def edit(nb_fn):
    def make():
        nb = fill(LESSON, BLANK)
        nb_fn(nb)
        return nb

    return make


def _edit_tests(nb):
    for c in nb.cells:
        if c.get("metadata", {}).get("nbgrader", {}).get("grade"):
            c.source = "print('all good!')"


def _delete_tests(nb):
    nb.cells = [c for c in nb.cells if not c.get("metadata", {}).get("nbgrader", {}).get("grade")]


def _forge_metadata(nb):
    for c in nb.cells:
        meta = c.get("metadata", {}).get("nbgrader")
        if meta and meta.get("grade"):
            meta["points"] = 1000
    nb.cells.append(cell("pass"))
    nb.cells[-1].metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "bonus",
        "points": 50,
        "locked": True,
        "solution": False,
        "schema_version": 3,
    }


def _duplicate_cells(nb):
    ok = fill(LESSON, OK)
    nb.cells = []
    for c in ok.cells:
        nb.cells.append(c)
        if c.cell_type == "code":
            nb.cells.append(copy.deepcopy(c))


READ_SOLUTIONS = f'''
import glob, json, os
found = []
for pattern in ["{sandbox.ROOT}/solutions/*.ipynb", "{sandbox.ROOT}/build/**/*.ipynb", "/tmp/**/*.ipynb",
                "{sandbox.ROOT}/autograder/examples/**/*.ipynb", "../**/*.ipynb"]:
    found += glob.glob(pattern, recursive=True)
for path in found:
    try:
        nb = json.load(open(path))
    except Exception:
        continue
    for c in nb["cells"]:
        src = "".join(c["source"])
        if "BEGIN SOLUTION" in src:
            exec(src.replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", ""), globals())
'''

ATTACKS = {
    # name: (notebook factory, the most it may score, what its honest part earns)
    "honest_perfect": (lambda: fill(LESSON, OK), 10),
    "patch_torch_allclose": (
        lambda: with_cells(
            WRONG_SDPA | {k: v for k, v in OK.items() if k not in WRONG_SDPA},
            ["torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True"],
        ),
        4,
    ),
    "patch_check_library": (
        lambda: with_cells(
            BLANK,
            [
                "import byhand._core as core, byhand.attention as att\n"
                "core.check = lambda *a, **k: None\natt.check = lambda *a, **k: None\n"
                "core.judge_result = lambda *a, **k: None\ncore.close = lambda *a, **k: True"
            ],
        ),
        0,
    ),
    # the notebook's own fallback for a missing package cannot stand in for the trusted check
    "stand_in_checks_blank": (lambda: with_cells(BLANK, [STAND_IN]), 0),
    "stand_in_checks_honest": (lambda: with_cells(OK, [STAND_IN]), 10),
    "blocks_the_package": (
        lambda: with_cells(BLANK, ["import sys\nsys.modules['byhand'] = None"], where="before_setup"),
        0,
    ),
    "patch_numpy_and_torch": (
        lambda: with_cells(
            BLANK,
            [
                "import numpy as np\nnp.allclose = lambda *a, **k: True\nnp.array_equal = lambda *a, **k: True\n"
                "torch.Tensor.__eq__ = lambda *a, **k: True\ntorch.testing.assert_close = lambda *a, **k: None"
            ],
        ),
        0,
    ),
    "lying_tensor_subclass": (
        lambda: with_cells(
            BLANK,
            [
                """
class Liar(torch.Tensor):
    def __eq__(self, other): return True
    def allclose(self, *a, **k): return True
    def tolist(self): return [0]
    def numpy(self): return torch.zeros(1).numpy()
def scaled_dot_product_attention(q, k, v, mask=None):
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype).as_subclass(Liar)
    return out, torch.zeros(*q.shape[:-1], k.shape[-2], dtype=q.dtype).as_subclass(Liar)
"""
            ],
            where="end",
        ),
        0,
    ),
    "input_transformer_blanks_tests": (
        lambda: with_cells(
            BLANK,
            [
                "ip = get_ipython()\n"
                "ip.input_transformers_post.append(lambda lines: [] if any('checks.check' in l for l in lines) else lines)"
            ],
        ),
        0,
    ),
    "edited_test_cells": (edit(_edit_tests), 0),
    "deleted_test_cells": (edit(_delete_tests), 0),
    "forged_metadata": (edit(_forge_metadata), 0),
    "reads_the_solutions": (lambda: with_cells(BLANK, [READ_SOLUTIONS], where="end"), 0),
    "writes_grader_files": (
        lambda: with_cells(
            BLANK,
            [
                "import glob, os\n"
                "for p in glob.glob('/tmp/**/grades.csv', recursive=True) + glob.glob('/tmp/**/*.json', recursive=True):\n"
                "    try:\n        open(p, 'w').write('pwned')\n    except Exception:\n        pass\n"
                f"for p in ['{BYHAND}/attention.py', '{sandbox.ROOT}/solutions/01_attention.ipynb']:\n"
                "    try:\n        open(p, 'a').write('# pwned')\n    except Exception as e:\n        print('blocked:', type(e).__name__)"
            ],
        ),
        0,
    ),
    "os_exit_in_an_answer": (lambda: fill(LESSON, OK | {"causal_mask_answer": "import os\nos._exit(3)"}), 9),
    "sigkill_self": (
        lambda: with_cells(OK, ["import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"], where="end"),
        10,
    ),
    "memory_bomb": (
        lambda: with_cells(
            OK, ["blocks = []\nwhile True:\n    blocks.append(bytearray(256 * 2**20))"], where="end"
        ),
        10,
    ),
    "fork_many": (
        lambda: with_cells(
            OK,
            [
                "import os, time\nn = 0\ntry:\n    for _ in range(5000):\n"
                "        if os.fork() == 0:\n            time.sleep(60)\n            os._exit(0)\n"
                "        n += 1\nexcept OSError as e:\n    print('fork refused after', n)"
            ],
            where="end",
        ),
        10,
    ),
    "uses_multiprocessing": (
        lambda: with_cells(
            OK,
            [
                "import multiprocessing as mp\n"
                "with mp.get_context('fork').Pool(2) as pool:\n"
                "    print(sum(pool.map(abs, range(-5, 5))))"
            ],
            where="end",
        ),
        10,
    ),
    "ignores_interrupts": (
        lambda: with_cells(
            OK,
            ["import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"],
            where="end",
        ),
        10,
    ),
    "infinite_loop_cell": (lambda: with_cells(OK, ["while True:\n    pass"], where="end"), 10),
    "infinite_loop_in_answer": (
        lambda: fill(
            LESSON, OK | {"causal_mask_answer": "def causal_mask(seq_len):\n    while True:\n        pass"}
        ),
        9,
    ),
}

# Submissions that wreck their own kernel's messaging may lose more than their dishonest part: they
# must never gain, and must still get rows with messages.
DISRUPTIVE = {"fork_many"}

BROKEN = {
    # name: (file contents or notebook, file name) -> must give an 'ungradable' row with a message
    "empty_file": (b"", "01_attention.ipynb"),
    "invalid_json": (b'{"cells": [', "01_attention.ipynb"),
    "not_a_notebook": (b'{"hello": "world"}', "01_attention.ipynb"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("adversarial")
    subs = root / "class"
    for name, (factory, _) in ATTACKS.items():
        (subs / name).mkdir(parents=True)
        nbformat.write(factory(), subs / name / f"{LESSON}.ipynb")
    for name, (raw, fname) in BROKEN.items():
        (subs / name).mkdir(parents=True)
        (subs / name / fname).write_bytes(raw)
    # an older notebook format (v3), and a browser's renamed download, both perfect
    (subs / "old_format").mkdir()
    v3 = nbformat.v3.convert.downgrade(nbformat.v4.upgrade(fill(LESSON, OK)))
    (subs / "old_format" / f"{LESSON}.ipynb").write_text(json.dumps(v3))
    (subs / "renamed").mkdir()
    nbformat.write(fill(LESSON, OK), subs / "renamed" / f"{LESSON} (1).ipynb")
    (subs / "no_notebook").mkdir()
    (subs / "no_notebook" / "notes.txt").write_text("I forgot")
    limits = sandbox.Limits(cell_timeout=8, notebook_timeout=120, memory_mb=3072)
    out = root / "out"
    result = grade_class(subs, out, workers=2, limits=limits, quiet=True)
    return {(g.student): g for g in result["graded"]}, out


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_scores_no_more_than_its_honest_part(graded, name):
    """Does this submission score exactly what its honest part earns, never more?"""
    by_student, _ = graded
    g = by_student[name]
    points = sum(r.points for r in g.rows)
    ok = points <= ATTACKS[name][1] if name in DISRUPTIVE else points == ATTACKS[name][1]
    assert ok, f"{name}: got {points}, expected {ATTACKS[name][1]}:\n" + "\n".join(
        f"  {r.question}: {r.points} {r.status} {r.message[:120]}" for r in g.rows
    )
    for r in g.rows:
        if r.status != "passed":
            assert r.message, f"{name}/{r.question}: no message"


@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_file_is_ungradable_with_a_reason(graded, name):
    """Does a broken file give an 'ungradable' row that says what is wrong?"""
    by_student, _ = graded
    rows = by_student[name].rows
    assert [r.status for r in rows] == ["ungradable"] and rows[0].message


def test_old_format_and_renamed_notebooks_are_graded(graded):
    """Are a v3 notebook and '01_attention (1).ipynb' graded as the lesson, with full points?"""
    by_student, _ = graded
    for name in ("old_format", "renamed"):
        assert sum(r.points for r in by_student[name].rows) == 10, by_student[name].rows


def test_every_student_folder_is_in_the_summary(graded):
    """Is no submission silently dropped, including a folder with no notebook?"""
    by_student, out = graded
    summary = (out / "summary.csv").read_text()
    for name in list(ATTACKS) + list(BROKEN) + ["old_format", "renamed", "no_notebook"]:
        assert f"\n{name}," in summary, f"{name} missing from summary.csv"


def test_deaths_and_timeouts_are_explained(graded):
    """Do a killed kernel and an endless loop give messages that say what happened?"""
    by_student, _ = graded
    msg = " ".join(r.message for r in by_student["infinite_loop_in_answer"].rows)
    assert "did not finish" in msg or "timed out" in msg, msg
    msg = " ".join(r.message for r in by_student["os_exit_in_an_answer"].rows)
    assert "kernel" in msg and "died" in msg, msg


@pytest.mark.skipif(not sandbox.can_isolate(), reason="isolation needs root on Linux")
def test_sandbox_facts(tmp_path):
    """Inside the sandbox: not root, no network, no secrets visible, no grading variables."""
    probe = with_cells(
        OK,
        [
            f'''
import os, socket, json
facts = {{"uid": os.getuid(), "env": sorted(os.environ), "cwd_files": sorted(os.listdir("."))}}
for path in ["{sandbox.ROOT}/solutions", "{sandbox.ROOT}/build", "{sandbox.ROOT}/tests", "{tmp_path}"]:
    facts["sees " + path] = os.path.exists(path) and bool(os.listdir(path))
try:
    socket.create_connection(("127.0.0.1", 22), timeout=2); facts["net"] = "connected"
except OSError as e:
    facts["net"] = type(e).__name__ + ":" + str(e.errno)
print("FACTS" + json.dumps(facts))
'''
        ],
        where="end",
    )
    subs = tmp_path / "class" / "spy"
    subs.mkdir(parents=True)
    nbformat.write(probe, subs / f"{LESSON}.ipynb")
    out = tmp_path / "out"
    grade_class(tmp_path / "class", out, workers=1, quiet=True)
    page = (out / "feedback" / "spy" / f"{LESSON}.html").read_text()
    import html as _html
    import re

    text = _html.unescape(re.sub(r"<[^>]+>", "", page))
    facts = json.loads(re.search(r"FACTS(\{.*?\})\s*$", text, re.M).group(1))
    assert facts["uid"] != 0
    assert not any(v for k, v in facts.items() if k.startswith("sees ")), facts
    assert facts["net"] != "connected" and "111" not in facts["net"], facts["net"]  # unreachable, not refused
    assert not any(
        "GRAD" in k.upper() or "NBGRADER" in k.upper() or "JPY" in k.upper() for k in facts["env"]
    ), facts["env"]
    assert set(facts["cwd_files"]) <= {"kernel.json", ".mpl", ".ipython", ".cache", ".config"} | {
        f for f in facts["cwd_files"] if f.startswith("kernel-")
    }
