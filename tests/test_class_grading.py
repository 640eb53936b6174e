"""Class-scale grading: LMS exports, zips, resuming after a kill, skipped demo cells, the report."""

import csv
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from shared_class import EXPENSIVE

from autograder import course
from autograder.classroom import grade_class
from autograder.collect.submissions import collect
from autograder.outcomes import safe_name
from autograder.run.restore import restore
from examples.build import CLASS

ROOT = Path(__file__).resolve().parent.parent
pytest_plugins = ["conftest_browser"]


def _grades(path):
    with open(path, newline="") as f:
        return sorted(tuple(r.values()) for r in csv.DictReader(f))


SMALL = {"students": ("alice", "bob", "erin"), "lessons": ("01_attention", "02_layernorm")}


@pytest.fixture(scope="module")
def small_class(shared_class, tmp_path_factory):
    """alice, bob and erin on lessons 01 and 02: a perfect, a blank and a mistaken student, as
    (their submissions, an output folder with their rows of the shared class: grades.csv, .state/)."""
    root = tmp_path_factory.mktemp("small")
    for student in SMALL["students"]:
        for lesson in SMALL["lessons"]:
            (root / student).mkdir(exist_ok=True)
            shutil.copyfile(CLASS / student / f"{lesson}.ipynb", root / student / f"{lesson}.ipynb")
    out = root.parent / (root.name + "-out")
    (out / ".state").mkdir(parents=True)
    rows = [r for r in shared_class.rows(SMALL["students"]) if r["lesson"] in SMALL["lessons"]]
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for student in SMALL["students"]:
        for lesson in SMALL["lessons"]:
            name = f"{safe_name(student)}__{safe_name(lesson)}.json"
            shutil.copyfile(shared_class.out / ".state" / name, out / ".state" / name)
    return root, out


@pytest.mark.full  # collecting Canvas zips is tested in-process (test_collect.py); this grades one too
def test_lms_flat_zip_gives_the_same_grades(small_class, tmp_path):
    """Does a Canvas zip of flat `<name>_<user id>_<attachment id>_<file>` files grade like the folder
    layout, each student labelled with their Canvas id (`alice_1001`)?"""
    root, out = small_class
    archive = tmp_path / "export.zip"
    uid = {"alice": 1001, "bob": 1002, "erin": 1003}
    with zipfile.ZipFile(archive, "w") as zf:
        for i, nb in enumerate(sorted(root.rglob("*.ipynb"))):
            zf.write(nb, f"submissions/{nb.parent.name}_{uid[nb.parent.name]}_{2000 + i}_{nb.name}")
    lms_out = tmp_path / "out"
    grade_class(archive, lms_out, workers=2, quiet=True)
    labels = {f"{name}_{n}": name for name, n in uid.items()}
    relabelled = sorted((labels[r[0]], *r[1:]) for r in _grades(lms_out / "grades.csv"))
    assert relabelled == _grades(out / "grades.csv")


def test_lms_pattern_is_configurable(tmp_path):
    """Does a custom file-name pattern map files to students and lessons?"""
    folder = tmp_path / "flat"
    folder.mkdir()
    shutil.copyfile(CLASS / "alice" / "01_attention.ipynb", folder / "01_attention--alice.ipynb")
    subs = collect(
        folder,
        course.lessons(),
        pattern=r"^(?P<lesson>.+)--(?P<student>.+)\.ipynb$",
        workdir=tmp_path / "staged",
    )
    assert [(s.student, s.lesson) for s in subs] == [("alice", "01_attention")]


def test_interrupted_grading_resumes_and_loses_nothing(small_class, tmp_path):
    """Killed mid-run and restarted, does grading finish only what is left, with the same grades?"""
    root, out = small_class
    resumed = tmp_path / "resumed"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "autograder", "grade", str(root), "--out", str(resumed), "--workers", "1"]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    state = resumed / ".state"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(state.glob("*.json"))) < 2:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(list(state.glob("*.json")))
    assert 2 <= done_before < 6, f"expected a partial run, found {done_before} graded"
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stderr.count("(resumed)") == done_before, again.stderr
    assert _grades(resumed / "grades.csv") == _grades(out / "grades.csv")


@pytest.mark.full  # six notebooks again through the CLI (the resume test runs the CLI in the gate)
def test_progress_is_plain_lines_off_a_terminal(small_class, tmp_path):
    """Without a terminal, does grading log one plain line per notebook with counts and ETA, and
    nothing else (no library warnings)?"""
    root, _ = small_class
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(root),
            "--out",
            str(tmp_path / "o"),
            "--workers",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0
    lines = [line for line in proc.stderr.splitlines() if line.startswith("graded ")]
    assert len(lines) == 6 and all("eta" in line for line in lines), proc.stderr
    assert "\r" not in proc.stderr
    # quiet: progress only, no library warning (nbgrader's SQLAlchemy SAWarning was one)
    noise = [line for line in proc.stderr.splitlines() if not line.startswith("graded ")]
    assert not noise, "grading printed more than its progress:\n" + "\n".join(noise)
    assert "alice" in proc.stdout and "01_attention" in proc.stdout  # the final table


# the lessons whose checks train or time a model (10-30 s each) in make test-full: the gate grades their
# perfect notebooks for real in the shared class, which skips the same cells
@pytest.mark.parametrize(
    "lesson",
    [pytest.param(les, marks=pytest.mark.full if les in EXPENSIVE else ()) for les in course.lessons()],
)
def test_demo_cells_are_skipped_and_nothing_graded_needs_them(lesson):
    """Are a lesson's demo cells skipped at grading, and its plain cells that nothing graded reads
    (run/prune.py), and do the reference answers still pass with only the rest run, in order?
    (The perfect example student, graded for real, is the end-to-end proof.)"""
    from autograder.judge.grade import _check_names
    from autograder.run.prune import skippable

    src = course.read_solution(lesson)
    demo = [c for c in src.cells if "demo" in course.tags(c)]
    student = course.read_solution(lesson)
    nb, skip, _ = restore(student, src)
    assert len(skip) == len(demo)
    skip |= skippable(nb, skip, src, _check_names(lesson))
    ns = {}
    graded_names = set(course.questions(lesson))
    for i, cell in enumerate(nb.cells):
        meta = course.nbgrader_meta(cell)
        if (
            cell.cell_type == "code"
            and i not in skip
            and not (meta.get("grade") and not meta.get("solution"))
        ):
            exec(compile(cell.source, f"<{lesson}:{i}>", "exec"), ns)
    import byhand

    module = byhand.for_lesson(lesson)
    for name in graded_names:
        module.check(name, ns, hidden=True)


def _write_report(out: Path) -> Path:
    """`make grade`'s last step on the small class's saved results: OUT/report."""
    import json

    from autograder.record.report import write_report
    from autograder.state import from_json as _graded_from_json

    graded = [
        _graded_from_json(json.loads(p.read_text()))
        for p in sorted((out / ".state").glob("*.json"))
        if p.name != "manual.json"
    ]
    write_report(out, graded)
    return out / "report"


def test_report_has_plots_and_numbers(small_class):
    """Does the class report hold its plots and the same numbers as CSV?"""
    _, out = small_class
    report = _write_report(out)
    for name in (
        "index.html",
        "scores.png",
        "pass_rates.png",
        "scores.csv",
        "pass_rates.csv",
        "mistakes.csv",
    ):
        assert (report / name).exists(), name
    rates = list(csv.DictReader(open(report / "pass_rates.csv")))
    alice_bob_erin = {r["question"]: r for r in rates if r["lesson"] == "01_attention"}
    assert (
        alice_bob_erin["causal_mask"]["passed"] == "1" and alice_bob_erin["causal_mask"]["submitted"] == "3"
    )
    mistakes = (report / "mistakes.csv").read_text()
    assert "polarity" in mistakes


@pytest.mark.full  # six notebooks again, in cold kernels
def test_cold_kernels_grade_like_warm_ones(small_class, tmp_path):
    """Do kernels started from scratch give the same grades as kernels forked from the warm zygote?"""
    from autograder.run import sandbox

    root, out = small_class
    cold = tmp_path / "cold"
    grade_class(root, cold, workers=2, quiet=True, limits=sandbox.Limits(warm_kernels=False))
    assert _grades(cold / "grades.csv") == _grades(out / "grades.csv")


@pytest.mark.full  # the gate's browser check loads the report (test_formgrader.py)
def test_report_plots_open_in_a_browser(small_class, chromium):
    """Does the report page load in Chromium with every plot drawn and nothing fetched from outside?"""
    from browser import NetworkLog, screenshot_path, serve

    _, out = small_class
    with serve(_write_report(out)) as base:  # its own report: the test may run before or without the other
        page = chromium.new_page(viewport={"width": 1100, "height": 900})
        log = NetworkLog.attach(page)
        page.goto(f"{base}/index.html")
        page.wait_for_load_state("load")
        sizes = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
        page.screenshot(path=str(screenshot_path("report-index")), full_page=True)
        text = page.inner_text("body")
        page.close()
    assert len(sizes) >= 2 and all(w > 0 for w in sizes), sizes
    assert not log.external and not log.failed, (log.external, log.failed)
    assert "polarity" in text  # erin's mistake, from the actual grades


def _children_of(pid: int) -> list:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@pytest.mark.full  # a worker killed from outside is rare; the gate resumes an interrupted run (the test above)
def test_a_worker_killed_mid_run_loses_no_submission(small_class, tmp_path):
    """When a grading worker dies (the OOM killer, a kill from outside), are the submissions it
    left unfinished graded again in a fresh pool, with the same grades as an undisturbed run?"""
    import threading
    from multiprocessing import forkserver

    root, out = small_class
    again = tmp_path / "out"
    killed = []

    def kill_a_worker():
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not killed:
            server = forkserver._forkserver._forkserver_pid
            workers = _children_of(server) if server else []
            if workers and list((again / ".state").glob("*__*.json")):
                os.kill(workers[0], signal.SIGKILL)
                killed.append(workers[0])
            time.sleep(0.05)

    t = threading.Thread(target=kill_a_worker, daemon=True)
    t.start()
    grade_class(root, again, workers=2, quiet=True)
    t.join(timeout=5)
    assert killed, "no worker was killed: the test did not test anything"
    rows = list(csv.DictReader(open(again / "grades.csv", newline="")))
    faults = [r for r in rows if r["message"].startswith("grader fault")]
    assert not faults, f"got grader faults after one worker died, expected none: {faults}"
    assert _grades(again / "grades.csv") == _grades(out / "grades.csv")


@pytest.mark.full  # a leak shows after some 50 notebooks; the descriptor code rarely changes (issue 53 item 4)
def test_grading_leaks_no_file_descriptors(small_class, tmp_path):
    """Does a grader process keep its open descriptors flat across notebooks? (Each run once left
    about 20 behind, and a worker ran out of them after some 50 notebooks.)"""
    root, _ = small_class
    # a warm-up as the run below is set up (one worker, one notebook): what a first run opens once
    # and keeps (imports, the pool's forkserver) is paid before counting
    one = tmp_path / "one" / "alice"
    one.mkdir(parents=True)
    shutil.copyfile(root / "alice" / "01_attention.ipynb", one / "01_attention.ipynb")
    grade_class(one.parent, tmp_path / "warm-up", workers=1, quiet=True)
    before = len(os.listdir("/proc/self/fd"))
    grade_class(root, tmp_path / "out", workers=1, quiet=True)  # six notebooks
    after = len(os.listdir("/proc/self/fd"))
    assert after - before < 10, f"got {after - before} more open descriptors after 6 notebooks, expected < 10"


def test_a_changed_check_grader_or_limit_grades_again(tmp_path, monkeypatch):
    """Run again into the same output folder, is a saved grade reused only while nothing that decides
    it changed: not after a check, a grading module or a lesson changed (the grading version), nor
    under other limits?"""
    import json

    from autograder import classroom
    from autograder.run import sandbox

    (tmp_path / "class" / "alice").mkdir(parents=True)
    shutil.copyfile(
        CLASS / "alice" / "01_attention.ipynb", tmp_path / "class" / "alice" / "01_attention.ipynb"
    )
    out = tmp_path / "out"
    saved = out / ".state" / "alice__01_attention.json"

    def run(limits=None):
        grade_class(tmp_path / "class", out, workers=1, quiet=True, limits=limits)
        return saved.stat().st_mtime_ns, json.loads(saved.read_text())["fingerprint"]

    first = run()
    assert run() == first, "got the unchanged submission graded again, expected its saved grade reused"
    real = classroom.lesson_version
    monkeypatch.setattr(
        classroom, "lesson_version", lambda lesson: {**real(lesson), "checks": "a changed check"}
    )
    changed = run()
    assert changed[0] != first[0] and changed[1] != first[1], "got the old grade reused after a check changed"
    other_limits = run(sandbox.Limits(cell_timeout=30))
    assert other_limits[1] != changed[1], "got the old grade reused under other limits"


def test_the_grading_version_covers_every_check_and_lesson():
    """Does the hash a saved grade must match read every module of the checks package, every lesson's
    source and the grading modules?"""
    from autograder.judge import grade
    from autograder.run import rootfs

    names = {name for name, _ in grade.grading_files()}
    expected = {f"byhand/{f.relative_to(rootfs.BYHAND).as_posix()}" for f in rootfs.BYHAND.rglob("*.py")}
    expected |= {f"solutions/{f.name}" for f in course.SOLUTIONS.glob("*.ipynb")}
    expected |= {f"autograder/{n}" for n in ("judge/grade.py", "run/restore.py", "record/feedback.py")}
    assert expected <= names, f"got no hash of {sorted(expected - names)}"
    assert all(path.exists() for _, path in grade.grading_files())


def _tree_rss_mb(pid: int) -> float:
    """Memory of `pid` and all its descendants together (sandboxed kernels included): the sum of
    their proportional set sizes (a page the zygote's forks share counts once, split among them)."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo += _children_of(p)
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


@pytest.mark.full  # the output cap rarely changes; its 30 s bound fails a starved machine (docs/testing.md)
def test_a_cell_that_prints_a_gigabyte_is_cut_not_kept(tmp_path):
    """Does a cell that writes 1 GB to stdout (a loop of sys.stdout.write) cost grading neither
    memory nor time: `make grade`'s command with one worker done in under 30 s, its whole process
    tree (grader, zygote, kernel) under 1 GB at every moment, the output kept cut with a note that
    says so, and the notebook's grades as without the cell?"""
    import nbformat

    from autograder.run.outputs import KEEP_BYTES

    lesson = "01_attention"
    nb = nbformat.read(CLASS / "alice" / f"{lesson}.ipynb", as_version=4)
    flood = "import sys\nfor _ in range(1024):\n    sys.stdout.write('x' * (1 << 20))\n"
    nb.cells.insert(3, nbformat.v4.new_code_cell(flood))
    (tmp_path / "class" / "alice").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "class" / "alice" / f"{lesson}.ipynb")
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(tmp_path / "class"),
        "--out",
        str(out),
        "--workers",
        "1",
    ]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, _tree_rss_mb(proc.pid))
        time.sleep(0.02)
    seconds = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr.read()[-2000:]
    assert peak < 1024, f"got a peak of {peak:.0f} MB for the grading process tree, expected under 1 GB"
    assert seconds < 30, f"got {seconds:.1f} s to grade one notebook, expected under 30 s"
    graded = [
        r
        for r in csv.DictReader(open(out / "grades.csv", newline=""))
        if r["question"] in course.questions(lesson)
    ]
    assert graded and all(r["status"] == "passed" for r in graded), graded
    kept = nbformat.read(out / "autograded" / "alice" / lesson / f"{lesson}.ipynb", as_version=4).cells[3]
    text = "".join(o.get("text", "") for o in kept.outputs)
    assert len(text) < KEEP_BYTES + 1000, f"got {len(text)} characters kept of the flood, expected a few MB"
    assert "the rest was cut" in text, f"got no note that the output was cut: ...{text[-200:]!r}"
    page = (out / "feedback" / "alice" / f"{lesson}.html").read_text(encoding="utf-8")
    assert len(page) < 2 << 20 and "of this output are not shown" in page, f"got a {len(page)}-character page"


# ---------------------------------------------------------------------------------------------
# The score in the notebook (issue 51, item 4): the last cell of every lesson prints the points the
# grader gives; on every notebook of the example class it must say what expected_grades.csv says
# (which `test_grading.py::test_example_class_gets_expected_grades` holds grades.csv to)


def _class_notebooks():
    from examples.build import EXPECTED, MALFORMED

    with open(EXPECTED, newline="") as f:
        pairs = sorted({(r["student"], r["lesson"]) for r in csv.DictReader(f) if r["student"] != MALFORMED})
    return [
        pytest.param(s, les, marks=() if les == "01_attention" else pytest.mark.breadth, id=f"{s}-{les}")
        for s, les in pairs
    ]


@pytest.mark.parametrize("student,lesson", _class_notebooks())
def test_score_cell_says_the_grades(student, lesson):
    """Does the lesson's last cell, run on this example notebook's answers, print the points
    expected_grades.csv gives each autograded question, their total, and the written answers?"""
    import contextlib
    import io
    import re

    import nbformat

    from autograder.course import answer_namespace, manual_questions, nbgrader_meta
    from examples.build import EXPECTED

    nb = nbformat.read(CLASS / student / f"{lesson}.ipynb", as_version=4)
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    assert last.get("id") == "score" and "demo" in last.metadata.get("tags", []), (
        "the last code cell is not the score"
    )
    answers = {
        nbgrader_meta(c)["grade_id"]: c.source
        for c in nb.cells
        if c.cell_type == "code" and nbgrader_meta(c).get("solution")
    }
    ns = answer_namespace(lesson, answers)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(last.source, f"<{lesson}: score>", "exec"), ns)
    printed = {
        m[0]: (int(m[1]), int(m[2])) for m in re.findall(r"^  (\w+): +(\d+) / (\d+)$", out.getvalue(), re.M)
    }
    with open(EXPECTED, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["student"] == student and r["lesson"] == lesson]
    written = manual_questions(lesson)
    expected = {
        r["question"]: (int(r["points"]), int(r["max_points"])) for r in rows if r["question"] not in written
    }
    assert printed == expected, f"got {printed}, expected {expected} (expected_grades.csv)\n{out.getvalue()}"
    total = sum(p for p, _ in expected.values()), sum(m for _, m in expected.values())
    assert f"total: {total[0]} / {total[1]} autograded points" in out.getvalue(), out.getvalue()
    for name in written:
        assert name in out.getvalue(), f"the written answer {name} is not named:\n{out.getvalue()}"
