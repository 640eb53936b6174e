"""Can a submission cheat, break the grader, or get lost? A catalogue of attacks and broken files,
each with the most it may score: what its honest part earns (lesson 01_attention, 10 points).

The grader is not a filter for these tricks: every point is decided by the trusted check (inputs
chosen by the grader, results sent back as raw numbers, compared in the grader's process), code runs
in a sandbox, and test cells come from the source notebook. So the catalogue also stands for
attacks it does not name.
"""

import copy
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import byhand
import nbformat
import pytest

from autograder.classroom import grade_class
from autograder.run import sandbox, workdirs
from examples import answers_for
from examples.build import fill

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


def _sabotaged_tests():
    """Every answer right, every test cell replaced by one that fails: the lesson's own test cells
    are what runs, so this earns full points (kept, the student's cells would cost them all)."""
    nb = fill(LESSON, OK)
    for c in nb.cells:
        meta = c.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            c.source = "raise AssertionError('a test the student wrote')"
    return nb


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
                "{sandbox.ROOT}/examples/**/*.ipynb", "../**/*.ipynb"]:
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

TOKEN = secrets.token_hex(4)  # names what the attacks below leave, to look for it afterwards
DISK_MB, SHM_MB = 96, 16  # the fixture's limits, small so that filling them is quick

WALK_FOR_SOLVED = f'''
import json, os
found = []
def consider(path):
    try:
        nb = json.load(open(path))
        cells = ["".join(c["source"]) for c in nb["cells"] if c.get("cell_type") == "code"]
    except Exception:
        return
    if any("def scaled_dot_product_attention" in c and "YOUR CODE" not in c and "NotImplementedError" not in c
           for c in cells):
        found.append(path)
        for c in cells:
            if c.lstrip().startswith(("def ", "class ", "import ", "from ")):
                try:
                    exec(c, globals())
                except Exception:
                    pass
roots = ["/srv", "/home", "/root", "/work", "/opt", "/mnt", "/var", "/tmp", "/dev/shm", "/"]
roots += [f"/proc/{{p}}/{{w}}" for p in os.listdir("/proc") if p.isdigit() for w in ("root", "cwd")]
skip = {{"proc", "sys", ".git", ".venv", "site-packages", "node_modules", "__pycache__", "lib", "usr"}}
seen = set()
for top in roots:
    for dirpath, dirnames, filenames in os.walk(top):
        if dirpath.count("/") - top.count("/") > 6 or dirpath in seen or len(found) > 2:
            dirnames[:] = []
            continue
        seen.add(dirpath)
        dirnames[:] = [d for d in dirnames if d not in skip]
        for f in filenames:
            if f.endswith(".ipynb") and "{LESSON}" in f:
                consider(os.path.join(dirpath, f))
print("FOUND" + json.dumps(found))
'''

FILL_DISK = f"""
import ctypes, json, os
written = {{}}
chunk = b"x" * (4 * 2**20)
for where in ["/tmp", "/dev/shm", os.path.expanduser("~"), os.getcwd(), "/var/tmp"]:
    n = 0
    for i in range(4 * {DISK_MB} // 32 + 1):  # tries four times its limit
        try:
            with open(os.path.join(where, f"tbb-fill-{TOKEN}-{{i}}"), "wb") as f:
                for _ in range(8):
                    f.write(chunk)
                    n += len(chunk)
        except OSError:
            break
    written[where] = written.get(where, 0) + n
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget.restype = ctypes.c_int
shmid = libc.shmget({int(TOKEN, 16) & 0x7FFFFFFF}, 8 * 2**20, 0o1600)  # IPC_CREAT | 0600, never removed
print("FILLED" + json.dumps({{"written": written, "shmid": shmid}}))
"""

LEAVE_A_DAEMON = f"""
import ctypes, os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(15, b"tbbd{TOKEN}", 0, 0, 0)  # PR_SET_NAME: findable afterwards
        time.sleep(600)
    os._exit(0)
time.sleep(0.5)
"""

KILL_WHAT_IT_SEES = """
import os, signal
for p in os.listdir("/proc"):
    if p.isdigit() and int(p) != os.getpid():
        try:
            os.kill(int(p), signal.SIGKILL)
        except OSError:
            pass
"""

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
    "sabotaged_test_cells": (_sabotaged_tests, 10),
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
                f"for p in ['{BYHAND}/attention/__init__.py', '{sandbox.ROOT}/solutions/01_attention.ipynb']:\n"
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

# Attacks on the machine itself: graded only where the sandbox isolates (as root on Linux). Without
# it they would really fill your disk, kill your processes and find what the fixture planted.
ISOLATED_ATTACKS = {
    # a solved copy of the lesson elsewhere on the machine (the fixture plants some): never found
    "walks_the_filesystem": (lambda: with_cells(BLANK, [WALK_FOR_SOLVED], where="end"), 0),
    # fills /tmp, /dev/shm, its home, its cwd and /var/tmp, and makes a SysV segment it never removes
    "fills_the_disk": (lambda: with_cells(OK, [FILL_DISK], where="end"), 10),
    "leaves_a_daemon": (lambda: with_cells(OK, [LEAVE_A_DAEMON], where="end"), 10),
    "kills_what_it_sees": (lambda: with_cells(OK, [KILL_WHAT_IT_SEES], where="end"), 10),
}
if sandbox.can_isolate():
    ATTACKS.update(ISOLATED_ATTACKS)
needs_isolation = pytest.mark.skipif(not sandbox.can_isolate(), reason="isolation needs root on Linux")

# Submissions that wreck their own kernel's messaging may lose more than their dishonest part: they
# must never gain, and must still get rows with messages.
DISRUPTIVE = {"fork_many"}

BROKEN = {
    # name: (file contents or notebook, file name) -> must give an 'ungradable' row with a message
    "empty_file": (b"", "01_attention.ipynb"),
    "invalid_json": (b'{"cells": [', "01_attention.ipynb"),
    "not_a_notebook": (b'{"hello": "world"}', "01_attention.ipynb"),
}


def plant_solved_copies() -> list:
    """Solved copies of the lesson where a grading machine may hold them: another checkout beside
    this one, /srv, the grader's home. The caller removes them (tests/shared_class.py, after grading)."""
    planted = []
    for parent in (sandbox.ROOT.parent, Path("/srv"), Path.home()):
        try:
            folder = Path(tempfile.mkdtemp(prefix="tbb-planted-", dir=parent))
        except OSError:
            continue
        (folder / "last-year" / "alice").mkdir(parents=True)
        nbformat.write(fill(LESSON, OK), folder / "last-year" / "alice" / f"{LESSON}.ipynb")
        planted.append(folder)
    return planted


def feedback_text(out, student) -> str:
    import html as _html

    page = (out / "feedback" / student / f"{LESSON}.html").read_text()
    return _html.unescape(re.sub(r"<[^>]+>", "", page))


@pytest.fixture
def graded(shared_class):
    """({student: Graded}, output folder): the attacks are the second pass of the shared class."""
    return shared_class.by_student(), shared_class.out


def add_students(subs):
    """This file's students in the shared class (tests/shared_class.py): every attack and broken
    file. Returns the limits to grade them with (small, so that filling them is quick)."""
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
    return sandbox.Limits(
        cell_timeout=8, notebook_timeout=120, memory_mb=3072, disk_mb=DISK_MB, shm_mb=SHM_MB
    )


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
    # its question is stopped at the self-check's limit per case (byhand._limits), or at the probe's per
    # question, or (code that catches the alarm) the cell's
    assert "ran past the" in msg or "stopped after" in msg or "did not finish" in msg or "timed out" in msg, (
        msg
    )
    msg = " ".join(r.message for r in by_student["os_exit_in_an_answer"].rows)
    assert "kernel" in msg and "died" in msg, msg


@needs_isolation
def test_no_solved_copy_elsewhere_on_the_machine_is_found(graded):
    """Does a submission that walks every folder it can read (and /proc/*/root, /proc/*/cwd) for a
    solved copy of the lesson find none, though the fixture planted some beside this checkout, in
    /srv and in the grader's home?"""
    _, out = graded
    found = json.loads(re.search(r"FOUND(\[.*?\])", feedback_text(out, "walks_the_filesystem")).group(1))
    assert found == [], f"got {found}, expected no notebook found outside the sandbox"


@needs_isolation
def test_disk_and_shm_stay_under_their_limits(graded):
    """Does a submission that writes four times its limit into /tmp, its home and /dev/shm get no
    more than `disk_mb` and `shm_mb`, and nothing at all into the host's /var/tmp?"""
    _, out = graded
    text = feedback_text(out, "fills_the_disk")
    filled = json.loads(re.search(r"FILLED(\{.*?\})\s*$", text, re.M).group(1))
    # feedback pages show the grader's temp folder as "…": put it back to read the paths
    w = {k.replace("…", tempfile.gettempdir()): v for k, v in filled["written"].items()}
    disk = sum(v for k, v in w.items() if k != "/dev/shm")
    assert disk <= DISK_MB * 2**20, f"got {disk / 2**20:.0f} MiB in home and /tmp, expected <= {DISK_MB}"
    assert w["/dev/shm"] <= SHM_MB * 2**20, f"got {w['/dev/shm'] / 2**20:.0f} MiB, expected <= {SHM_MB}"
    assert w["/var/tmp"] == 0, f"got {w['/var/tmp']} bytes in /var/tmp, expected none"
    assert _host_files_with(f"tbb-fill-{TOKEN}") == [], (
        "the attack's files reached the host's temporary folders"
    )
    # and it did try: the limits, not a failure to write, stopped it
    assert w["/tmp"] >= DISK_MB * 2**20 // 2 and w["/dev/shm"] >= SHM_MB * 2**20 // 2, w


def _host_files_with(token: str) -> list:
    hits = []
    for top in ("/tmp", "/dev/shm", "/var/tmp"):
        for dirpath, dirnames, files in os.walk(top):
            if dirpath.count("/") - top.count("/") >= 3:
                dirnames[:] = []
            hits += [os.path.join(dirpath, f) for f in files + dirnames if token in f]
    return hits


def _host_processes_named(name: str) -> list:
    pids = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and open(f"/proc/{p}/comm").read().strip() == name[:15]:
                pids.append(int(p))
        except OSError:
            pass
    return pids


@needs_isolation
def test_nothing_a_submission_left_remains(graded):
    """After grading: no file the attacks wrote on the host, no SysV segment, no daemon."""
    graded  # noqa: B018 - graded first
    assert _host_files_with(TOKEN) == [], "got files a submission wrote, expected none"
    with open("/proc/sysvipc/shm") as f:
        keys = [int(line.split()[0]) for line in f.readlines()[1:]]
    assert int(TOKEN, 16) & 0x7FFFFFFF not in keys, "got the submission's SysV segment, expected it gone"
    assert _host_processes_named(f"tbbd{TOKEN}") == [], "got the submission's daemon alive, expected none"


@pytest.mark.skipif(not sandbox.can_isolate(), reason="isolation needs root on Linux")
def test_sandbox_facts(tmp_path):
    """Inside the sandbox: not root, no network, no secrets visible, no grading variables."""
    probe = with_cells(
        OK,
        [
            f'''
import os, socket, json
facts = {{"uid": os.getuid(), "env": sorted(os.environ), "cwd_files": sorted(os.listdir("."))}}
facts["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
facts["root"] = sorted(os.listdir("/"))
facts["home"] = sorted(os.listdir("/home"))
for path in ["{sandbox.ROOT}/solutions", "{sandbox.ROOT}/build", "{sandbox.ROOT}/tests", "{tmp_path}",
             "{sandbox.ROOT}/examples", "{sandbox.ROOT}/autograder/judge/grade.py", "/srv",
             "/etc/shadow", "/root/.ssh", "/var"]:
    facts["sees " + path] = os.path.exists(path) and (not os.path.isdir(path) or bool(os.listdir(path)))
facts["beside the checkout"] = sorted(os.listdir("{sandbox.ROOT.parent}"))
facts["grading folders"] = {{d: sorted(os.listdir(os.path.join("{sandbox.ROOT.parent}", d)))
                            for d in facts["beside the checkout"] if d.startswith("{workdirs.GRADING_PREFIX}")}}
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
    assert facts["pids"] == [1, 2], f"got processes {facts['pids']}, expected only its init and itself"
    assert facts["home"] == ["student"], facts["home"]
    # a checkout under the temp folder (a clone in /tmp) has the kernel's own connection folder beside
    # it, bound at its host path: that folder may show, holding this kernel's slot and nothing else
    own = facts["grading folders"]
    beside = [d for d in facts["beside the checkout"] if d not in own]
    assert beside == [sandbox.ROOT.name], f"got {facts['beside the checkout']} beside the checkout"
    assert all(v == ["slot0"] for v in own.values()), f"got {own}, expected only the kernel's own slot"
    assert "srv" not in facts["root"] and "var" not in facts["root"], facts["root"]
    assert not any(v for k, v in facts.items() if k.startswith("sees ")), facts
    assert facts["net"] != "connected" and "111" not in facts["net"], facts["net"]  # unreachable, not refused
    assert not any(
        "GRAD" in k.upper() or "NBGRADER" in k.upper() or "JPY" in k.upper() for k in facts["env"]
    ), facts["env"]
    assert set(facts["cwd_files"]) <= {"kernel.json", ".mpl", ".ipython", ".cache", ".config"} | {
        f for f in facts["cwd_files"] if f.startswith("kernel-")
    }


# ---------------------------------------------------------------------------------------------
# A grader interrupted (Ctrl-C) or killed (SIGKILL) mid-run: what is left, and what the next run cleans.
# The grader runs in a mount namespace with a /dev/shm of its own, so that what it leaves there is
# told apart from what the other processes of this machine leave; its TMPDIR is the test's.

WRAPPER = r"""
import ctypes, json, os, signal, subprocess, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x00020000) or libc.mount(b"none", b"/", None, (1 << 18) | 16384, None):
    sys.exit("no mount namespace")
if libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", 0, b"size=64m,mode=1777"):
    sys.exit("no private /dev/shm")
how, name, cmd = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is for the grader and its children


def grade():
    return subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def alive():
    out = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and open(f"/proc/{p}/comm").read().strip() == name[:15]:
                out.append(int(p))
        except OSError:
            pass
    return out


p = grade()
threading.Thread(target=p.stderr.read, daemon=True).start()
deadline = time.monotonic() + 600
while not alive() and time.monotonic() < deadline and p.poll() is None:
    time.sleep(0.2)  # until a kernel is in the middle of a submission
time.sleep(1)
report = {"daemons_during": alive(), "tmp_during": sorted(os.listdir(os.environ["TMPDIR"]))}
if how == "int":
    os.killpg(os.getpgrp(), signal.SIGINT)  # what Ctrl-C in a terminal does
else:
    os.kill(p.pid, signal.SIGKILL)  # what the out-of-memory killer does
p.wait(timeout=120)
deadline = time.monotonic() + 20  # the chain (workers, zygotes, sandboxes) ends within seconds
while alive() and time.monotonic() < deadline:
    time.sleep(0.2)
time.sleep(1)
report.update(rc=p.returncode, daemons=alive(), shm=sorted(os.listdir("/dev/shm")),
              tmp=sorted(os.listdir(os.environ["TMPDIR"])))
if how == "kill":  # the next run
    q = grade()
    q.communicate(timeout=900)
    report.update(next_rc=q.returncode, next_shm=sorted(os.listdir("/dev/shm")),
                  next_tmp=sorted(os.listdir(os.environ["TMPDIR"])), next_daemons=alive())
print("REPORT" + json.dumps(report))
"""

SLOW_AND_MESSY = f"""
import ctypes, os, time
for where in ("/tmp", "/dev/shm", os.path.expanduser("~")):
    open(os.path.join(where, "tbb-slow-{TOKEN}"), "wb").write(b"x" * 2**20)
if os.fork() == 0:
    os.setsid()
    ctypes.CDLL(None).prctl(15, b"tbbk{TOKEN}", 0, 0, 0)
    time.sleep(600)
    os._exit(0)
time.sleep(15)
"""


def _interrupt_a_grader(tmp_path, request, how: str) -> dict:
    subs = tmp_path / "class"
    for student in ("s1", "s2", "s3"):
        (subs / student).mkdir(parents=True)
        nbformat.write(with_cells(OK, [SLOW_AND_MESSY], where="end"), subs / student / f"{LESSON}.ipynb")
    # a TMPDIR of its own, to see what the grader leaves there; short, as the grader needs room for
    # its unix sockets in it (under pytest-xdist, tmp_path is too deep and the grader uses /tmp)
    tmpdir = Path(tempfile.mkdtemp(prefix="tbb-adv-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(tmpdir, ignore_errors=True))
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(subs),
        "--out",
        str(tmp_path / "out"),
        "--workers",
        "2",
    ]
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, how, f"tbbk{TOKEN}", json.dumps(cmd)],
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "TMPDIR": str(tmpdir)},
        cwd=sandbox.ROOT,
        start_new_session=True,
    )
    m = re.search(r"REPORT(\{.*\})", proc.stdout)
    assert m, f"got no report, expected one:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return json.loads(m.group(1))


@pytest.mark.full  # 68 s; the interrupt handling rarely changes: the gate kills and resumes a run (test_class_grading.py)
@needs_isolation
def test_ctrl_c_leaves_nothing(tmp_path, request):
    """After Ctrl-C mid-run: no temporary folder, no semaphore in /dev/shm, no kernel or anything a
    kernel started, and nothing a kernel wrote, is left."""
    r = _interrupt_a_grader(tmp_path, request, "int")
    assert r["daemons_during"], "got no submission process while grading, expected one (the test is void)"
    assert any(t.startswith("tbb-grade-") for t in r["tmp_during"]), (
        f"got {r['tmp_during']} in TMPDIR while grading, expected the run's folder (the test is void)"
    )
    assert r["daemons"] == [], f"got processes {r['daemons']} alive, expected none"
    assert r["shm"] == [], f"got {r['shm']} in /dev/shm, expected nothing"
    assert [t for t in r["tmp"] if t != "tbb-sandbox-uids"] == [], (
        f"got {r['tmp']} in TMPDIR, expected nothing"
    )
    assert _host_files_with(f"tbb-slow-{TOKEN}") == []


@pytest.mark.full  # SIGKILL of the grader is rare (Ctrl-C, above, is in make test-full too)
@needs_isolation
def test_a_killed_grader_leaves_nothing_the_next_run_does_not_clean(tmp_path, request):
    """After SIGKILL of the grader mid-run: its kernels and what they started die with it, what they
    wrote is gone; its temporary folder is removed by the next run, which grades what was left."""
    r = _interrupt_a_grader(tmp_path, request, "kill")
    assert r["daemons_during"], "got no submission process while grading, expected one (the test is void)"
    assert any(t.startswith("tbb-grade-") for t in r["tmp_during"]), (
        f"got {r['tmp_during']} in TMPDIR while grading, expected the run's folder (the test is void)"
    )
    assert r["rc"] == -signal.SIGKILL
    assert r["daemons"] == [], f"got processes {r['daemons']} alive after the kill, expected none"
    assert _host_files_with(f"tbb-slow-{TOKEN}") == []
    assert r["next_rc"] == 0, r
    assert r["next_daemons"] == [] and r["next_shm"] == [], r
    assert [t for t in r["next_tmp"] if t != "tbb-sandbox-uids"] == [], (
        f"got {r['next_tmp']}, expected nothing"
    )
    summary = (tmp_path / "out" / "summary.csv").read_text()
    assert all(f"\n{s},{LESSON},10," in summary for s in ("s1", "s2", "s3")), summary
