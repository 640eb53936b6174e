"""Does a lesson work where students run it: outside this repository, in a clean virtual environment
that holds only the student package's wheel, torch, ipykernel and matplotlib?

The notebooks and the wheel are the ones the site serves (site/build.py `write_downloads`). Every
student notebook runs from a work folder outside the repository, with no repository path on
`sys.path`:

* without the package installed at all: every cell runs, no import fails, each self-check says the
  checks are off and the first cell says how to install them;
* then as in Colab (`google.colab` imported first), lesson 01 handed out with `BYHAND_SOURCE` set to
  the site's wheel, served over local HTTP: its first cell installs the package itself;
* then, the package installed: untouched, each self-check says the exercise is not done yet and
  the kernel reaches the last cell; with the example answers filled in, every self-check passes.

Kernels run two at a time. The clean venv installs the same versions as this venv, from the same
places pip is configured with (on the build machine: local wheels, no network).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from browser import serve
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient

from autograder import course
from autograder.tooling.student import with_install_source
from examples import answers_for

ROOT = Path(__file__).resolve().parent.parent
LESSONS = course.lessons()
PARALLEL = 2
NOT_DONE = "not done yet"
OFF = "self-checks are off"


def _site_build():
    spec = importlib.util.spec_from_file_location("site_build", ROOT / "site" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pip(python: Path, *args: str) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"pip install {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"


def _freeze(python: Path) -> str:
    return subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True
    ).stdout


def student_pins() -> list:
    """What the clean venv installs: this venv's versions, or `STUDENT_TORCH` (a pip requirement or a
    wheel path, e.g. `torch==2.4.1`, the oldest the student package declares) in place of its torch
    (`make test-oldest-torch`)."""
    pins = [f"{d}=={importlib.metadata.version(d)}" for d in ("torch", "numpy", "ipykernel", "matplotlib")]
    if os.environ.get("STUDENT_TORCH"):
        pins[0] = os.environ["STUDENT_TORCH"]
    return pins


class CleanVenv:
    """A fresh venv outside the repository, and kernels started from it in fresh work folders."""

    def __init__(self, root: Path):
        self.root = root
        self.venv = root / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True, timeout=300)
        self.python = self.venv / "bin" / "python"
        _pip(self.python, *student_pins())
        kernels = root / "kernels" / "clean"
        kernels.mkdir(parents=True)
        (kernels / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [str(self.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": "clean venv",
                    "language": "python",
                }
            )
        )
        self.specs = KernelSpecManager(kernel_dirs=[str(kernels.parent)])
        self.runs = 0

    def sys_path(self) -> list:
        out = subprocess.run(
            [str(self.python), "-c", "import json, sys; print(json.dumps(sys.path))"],
            capture_output=True,
            text=True,
            check=True,
            cwd=self.root,
            env=self.env(self.root),
        )
        return json.loads(out.stdout)

    def env(self, work: Path) -> dict:
        """A student's environment: nothing of this repository or this venv in it."""
        return {
            "PATH": f"{self.venv / 'bin'}:/usr/bin:/bin",
            "HOME": str(work),
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            "MPLCONFIGDIR": str(work / ".mpl"),
            "OMP_NUM_THREADS": "1",  # two kernels at a time on a 2-core machine
            "PYTHONHASHSEED": "0",
        }

    async def execute(self, nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
        """Run every cell of `nb` (errors allowed, as Run All in a student's Jupyter shows them)."""
        self.runs += 1
        work = self.root / f"work{self.runs}"
        work.mkdir()
        km = AsyncKernelManager(kernel_name="clean", kernel_spec_manager=self.specs)
        client = NotebookClient(
            nb, km=km, timeout=300, allow_errors=True, resources={"metadata": {"path": str(work)}}
        )
        # cleanup_kc: nbclient shuts down only a kernel whose manager it made itself; without it
        # every run's kernel stays alive (about 350 MB each) until the test process exits
        await client.async_execute(cwd=str(work), env=self.env(work), cleanup_kc=True)
        return nb


# what Colab has imported before a notebook's first cell runs
COLAB_CELLS = ["import sys, types\nsys.modules['google.colab'] = types.ModuleType('google.colab')"]


def fill(nb: nbformat.NotebookNode, cells: dict, before: list = ()) -> nbformat.NotebookNode:
    """A copy of `nb` (each run writes its outputs into its own) with the answer cells `cells`
    filled, and the code cells `before` first."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    nb.cells[:0] = [nbformat.v4.new_code_cell(code) for code in before]
    for cell in nb.cells:
        gid = course.nbgrader_meta(cell).get("grade_id")
        if gid in cells:
            cell.source = cells[gid].strip("\n")
    return nb


def run_all(venv: CleanVenv, jobs: dict) -> dict:
    """{key: notebook} -> {key: executed notebook}, PARALLEL kernels at a time."""

    async def main():
        gate = asyncio.Semaphore(PARALLEL)

        async def one(key, nb):
            async with gate:
                return key, await venv.execute(nb)

        return dict(await asyncio.gather(*(one(k, nb) for k, nb in jobs.items())))

    # the session's browser (Playwright's sync API) keeps an event loop running on this thread
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, main()).result()


def graded_test_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code" and course.nbgrader_meta(c).get("grade") is True]


def text_of(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif out.get("output_type") == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
    return "".join(parts)


def errors(nb) -> list:
    return [
        (i, o.get("ename"), o.get("evalue", "")[:200])
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


def reached_the_end(nb) -> bool:
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    return last.get("execution_count") is not None


@pytest.fixture(scope="module")
def anywhere(tmp_path_factory):
    """Every student notebook run three ways in one clean venv (see the module docstring)."""
    t0 = time.monotonic()
    root = tmp_path_factory.mktemp("anywhere")
    served = root / "site-downloads"
    files = _site_build().write_downloads(served, LESSONS)
    wheel = next(p for p in files if p.suffix == ".whl")
    venv = CleanVenv(root)
    t_venv = time.monotonic() - t0
    path_before = venv.sys_path()
    student = {lesson: nbformat.read(served / f"{lesson}.ipynb", as_version=4) for lesson in LESSONS}
    results = {
        ("no_package", k): nb
        for k, nb in run_all(venv, {k: fill(nb, {}) for k, nb in student.items()}).items()
    }
    # the package goes in the way Colab puts it in: the first cell of a notebook handed out with
    # BYHAND_SOURCE = the wheel's URL on the site (served here over local HTTP) installs it itself
    with serve(served) as base:
        url = f"{base}/{wheel.name}"
        # read as a notebook file is read: the released JSON holds each cell's source as lines
        handed_out = nbformat.reads(with_install_source(json.dumps(student[LESSONS[0]]), url), as_version=4)
        results |= run_all(venv, {("colab", LESSONS[0]): fill(handed_out, {}, before=COLAB_CELLS)})
    colab_freeze = _freeze(venv.python)
    _pip(venv.python, str(wheel))  # a no-op when the Colab step installed it; the other runs need it
    jobs = {("untouched", lesson): fill(nb, {}) for lesson, nb in student.items()}
    for lesson, nb in student.items():
        answers = answers_for(lesson)
        if answers is not None:
            jobs[("answered", lesson)] = fill(nb, answers.ALL_OK)
    results |= run_all(venv, jobs)
    elapsed = time.monotonic() - t0
    print(f"\nclean venv: {t_venv:.0f} s to create; {len(results)} notebooks run in {elapsed - t_venv:.0f} s")
    return {
        "results": results,
        "sys_path": path_before,
        "served": served,
        "venv": venv,
        "colab_freeze": colab_freeze,
    }


@pytest.mark.e2e
@pytest.mark.full  # a clean venv (minutes); the gate runs test_the_package_needs_only_torch_and_numpy
def test_in_colab_the_first_cell_installs_the_checks_from_the_site(anywhere):
    """Does a notebook handed out with `BYHAND_SOURCE` set to the site's wheel URL install the
    checks by itself where `google.colab` is imported (as in Colab), so its self-checks run?"""
    nb = anywhere["results"][("colab", LESSONS[0])]
    setup = next(c for c in nb.cells if "setup" in c.metadata.get("tags", []))
    assert OFF.lower() not in text_of(setup).lower(), f"got from the first cell: {text_of(setup)!r}"
    checks = [text_of(c) for c in graded_test_cells(nb)]
    assert checks and all(NOT_DONE in t for t in checks), f"got self-checks {checks}, expected 'not done yet'"
    freeze = anywhere["colab_freeze"]
    assert "transformer-by-hand==" in freeze.lower() or "transformer_by_hand==" in freeze.lower(), (
        f"got installed after the first cell: {freeze}, expected the course's package among them"
    )


@pytest.mark.e2e
@pytest.mark.full  # a clean venv (minutes); the gate runs test_the_package_needs_only_torch_and_numpy
def test_the_clean_venv_has_no_repository_path(anywhere):
    """Is nothing of the repository importable in the students' venv (no path, no autograder)?"""
    path = anywhere["sys_path"]
    assert not [p for p in path if str(ROOT) in p], f"repository paths on sys.path: {path}"
    venv = anywhere["venv"]
    names = subprocess.run(
        [str(venv.python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True
    ).stdout.lower()
    for absent in ("nbgrader", "transformer-blocks-course", "jupyterlab", "nbval"):
        assert absent not in names, f"{absent} is installed in the clean venv:\n{names}"


@pytest.mark.e2e
@pytest.mark.full  # a clean venv (minutes); the gate runs test_the_package_needs_only_torch_and_numpy
def test_the_clean_venv_has_the_torch_it_was_given(anywhere):
    """Does the clean venv hold the torch of its pin (`STUDENT_TORCH` under `make test-oldest-torch`)?"""
    pin = student_pins()[0]
    got = subprocess.run(
        [str(anywhere["venv"].python), "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"clean venv: torch {got}")
    if pin.startswith("torch=="):
        expected = pin.removeprefix("torch==")
        assert got.split("+")[0] == expected.split("+")[0], f"got torch {got}, expected {expected}"


@pytest.mark.e2e
@pytest.mark.full  # a clean venv (minutes); the gate runs test_the_package_needs_only_torch_and_numpy
def test_served_notebooks_are_the_student_notebooks(anywhere):
    """Are the notebooks this test runs byte for byte what the site serves and notebooks/ holds?"""
    for lesson in LESSONS:
        served = (anywhere["served"] / f"{lesson}.ipynb").read_bytes()
        assert served == (course.NOTEBOOKS / f"{lesson}.ipynb").read_bytes(), lesson


@pytest.mark.e2e
@pytest.mark.full  # a clean venv (minutes); the gate runs test_the_package_needs_only_torch_and_numpy
@pytest.mark.parametrize("lesson", LESSONS)
def test_without_the_package_every_cell_runs(anywhere, lesson):
    """Without byhand: does the first cell say how to install it, does every self-check say it is
    off (no error), and does no cell fail but on the blank exercises themselves?"""
    nb = anywhere["results"][("no_package", lesson)]
    setup = next(c for c in nb.cells if "setup" in course.tags(c))
    assert "pip install" in text_of(setup) and "Self-checks are off" in text_of(setup), text_of(setup)
    for cell in graded_test_cells(nb):
        out = text_of(cell)
        assert OFF in out and "Error" not in out, f"{lesson}: a self-check without the package:\n{out}"
    # the blanks, and what depends on them: a name never defined, or a results dict that a loop over
    # a blank exercise left empty (a demo reading runs[0] after the training loop raised)
    allowed = {"NotImplementedError", "NameError", "KeyError"}
    bad = [e for e in errors(nb) if e[1] not in allowed or "byhand" in e[2] or "checks" in e[2]]
    assert not bad, f"{lesson}: cells failed for another reason than a blank exercise: {bad}"
    assert reached_the_end(nb)


@pytest.mark.e2e
@pytest.mark.full  # a clean venv (minutes); the gate runs test_the_package_needs_only_torch_and_numpy
@pytest.mark.parametrize("lesson", LESSONS)
def test_untouched_each_self_check_says_not_done(anywhere, lesson):
    """With the wheel, untouched: does every self-check say 'not done yet', and does the kernel
    survive to the last cell?"""
    nb = anywhere["results"][("untouched", lesson)]
    setup = next(c for c in nb.cells if "setup" in course.tags(c))
    assert OFF not in text_of(setup), text_of(setup)
    for cell in graded_test_cells(nb):
        assert NOT_DONE in text_of(cell), f"{lesson}: a self-check on a blank exercise said:\n{text_of(cell)}"
    assert reached_the_end(nb)


@pytest.mark.e2e
@pytest.mark.full  # a clean venv (minutes); the gate runs test_the_package_needs_only_torch_and_numpy
@pytest.mark.parametrize("lesson", [lesson for lesson in LESSONS if answers_for(lesson) is not None])
def test_answered_every_self_check_passes(anywhere, lesson):
    """With the wheel and the example answers: does every cell run clean and every self-check pass?"""
    nb = anywhere["results"][("answered", lesson)]
    assert not errors(nb), f"{lesson}: cells failed: {errors(nb)}"
    for cell in graded_test_cells(nb):
        out = text_of(cell)
        assert "pass." in out and OFF not in out, f"{lesson}: a self-check said:\n{out}"
    assert reached_the_end(nb)


@pytest.mark.parametrize("lesson", LESSONS)
def test_setup_cell_is_the_canonical_one(lesson):
    """Does the lesson's setup cell seed and configure first, then import its checks through the
    one block that works without the package (`python -m autograder setup-cells` writes it)?"""
    from autograder.tooling import student

    cell = next(c for c in course.read_solution(lesson).cells if "setup" in course.tags(c))
    assert cell.source == student.setup_cell(cell.source, student.topic_of(lesson)), (
        f"{lesson}: the setup cell is not the canonical one: run `python -m autograder setup-cells {lesson}`"
    )
    block = cell.source.index(student.setup_block(student.topic_of(lesson)))
    assert cell.source.index("torch.manual_seed(") < block, f"{lesson}: seed before the checks import"


@pytest.mark.slow  # builds the wheel: about 2 s of CPU
def test_the_site_serves_the_wheel_it_names(tmp_path):
    """Is the wheel the site links to the one `make wheel` builds, with the name the pages give?"""
    site = _site_build()
    files = site.write_downloads(tmp_path, LESSONS)
    assert files[-1].name == site.wheel_name(), f"got {files[-1].name}, expected {site.wheel_name()}"
    assert site.wheel_name() in site.install_line()


# The seconds-long version for the gate (`make test`): this venv, no clean one.
PROBE_IMPORTS = r"""
import importlib, json, sys
import numpy, torch
before = {m.split(".")[0] for m in sys.modules}
import byhand
for lesson in json.loads(sys.argv[1]):
    byhand.for_lesson(lesson)
new = {m.split(".")[0] for m in sys.modules} - before
print(json.dumps(sorted(new - set(sys.stdlib_module_names) - {"byhand"})))
"""

PROBE_SETUP = r"""
import importlib.abc, json, sys
class NoByhand(importlib.abc.MetaPathFinder):  # the package is not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "byhand":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoByhand())
for lesson, source in json.loads(sys.argv[1]).items():
    ns = {}
    exec(compile(source, f"<{lesson} setup cell>", "exec"), ns)
    ns["checks"].check("scaled_dot_product_attention")  # what a self-check cell calls
"""


def _python(code: str, arg: str, tmp_path) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter of this venv, outside the repository, the repository off sys.path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"MPLBACKEND": "Agg"}
    return subprocess.run(
        [sys.executable, "-c", code, arg], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow  # a fresh interpreter, every lesson's setup cell with the package absent
def test_the_package_needs_only_torch_and_numpy(tmp_path):
    """Does importing byhand and every lesson's checks load nothing but the standard library, torch
    and numpy (what `pip install` of the wheel brings), and does every lesson's setup cell run with
    the package absent, saying how to install it, its stand-in self-checks saying they are off?"""
    done = _python(PROBE_IMPORTS, json.dumps(LESSONS), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    extra = json.loads(done.stdout.splitlines()[-1])
    assert extra == [], f"got byhand importing {extra}, expected only the standard library, torch and numpy"
    setups = {
        lesson: next(c.source for c in _student_notebook(lesson).cells if "setup" in course.tags(c))
        for lesson in LESSONS
    }
    done = _python(PROBE_SETUP, json.dumps(setups), tmp_path)
    assert done.returncode == 0, f"got a setup cell failing without the package:\n{done.stderr[-3000:]}"
    out = done.stdout
    assert out.count("Self-checks are off") == len(LESSONS), out
    assert out.count(OFF) == len(LESSONS) and "pip install" in out, out


def _student_notebook(lesson: str) -> nbformat.NotebookNode:
    return nbformat.read(course.NOTEBOOKS / f"{lesson}.ipynb", as_version=4)
