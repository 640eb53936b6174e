"""Handing out notebooks: a zip for an LMS, and nbgrader's exchange with the course id set."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder import course
from autograder.tooling.handout import HandoutError, handout
from autograder.tooling.nbgrader_course import assemble, release_to_exchange

NBGRADER = [sys.executable, "-m", "nbgrader"]


def _byhand_line(notebook: bytes) -> str:
    nb = json.loads(notebook)
    setup = next(c for c in nb["cells"] if "setup" in (c["metadata"].get("tags") or []))
    return re.search(r'^BYHAND = "([^"]*)"', "".join(setup["source"]), re.M).group(1)


@pytest.mark.slow  # builds the handout twice and installs its wheel
def test_handout_zip_works_as_handed_out(tmp_path, monkeypatch):
    """Without BYHAND_SOURCE: does `make handout` zip every student notebook in both languages, the
    checks' wheel, and a README whose install line is the notebooks' own (the wheel in the zip, never
    the placeholder git URL), the same bytes on every run; does the wheel install and import?"""
    monkeypatch.delenv("BYHAND_SOURCE", raising=False)
    first = handout(tmp_path / "a.zip")
    again = handout(tmp_path / "b.zip")
    assert first.read_bytes() == again.read_bytes(), "the handout zip differs between two runs"
    with zipfile.ZipFile(first) as zf:
        names = zf.namelist()
        wheel = next(n for n in names if n.endswith(".whl"))
        zh = sorted(p.name for p in (course.NOTEBOOKS / "zh_CN").glob("*.ipynb"))
        assert zh, "no Chinese notebooks to hand out"
        assert names == ["README.txt", wheel] + [f"{n}.ipynb" for n in course.lessons()] + [
            f"zh_CN/{wheel}"
        ] + [f"zh_CN/{n}" for n in zh], names
        readme = zf.read("README.txt").decode()
        for name in names:
            if name.endswith(".ipynb"):
                data = zf.read(name)
                assert b"<org>" not in data, f"{name} installs from the placeholder"
                assert _byhand_line(data) == wheel, name
        zf.extract(wheel, tmp_path)
    assert f'pip install "{wheel}"' in readme and "pip install ./student" not in readme
    assert "YOUR ANSWER HERE" in readme and "zh_CN" in readme and "自检" in readme
    target = tmp_path / "site-packages"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(tmp_path / wheel),
        ],
        check=True,
        timeout=300,
    )
    probe = "import byhand, sys; print(byhand.__file__)"
    got = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert str(target) in got.stdout, got.stdout + got.stderr


@pytest.mark.slow  # builds the handout twice
def test_handout_installs_from_the_given_source_and_refuses_the_placeholder(tmp_path, monkeypatch):
    monkeypatch.setenv("BYHAND_SOURCE", "https://course.example.edu/transformer_by_hand.whl")
    with zipfile.ZipFile(handout(tmp_path / "a.zip")) as zf:
        assert (
            _byhand_line(zf.read("01_attention.ipynb"))
            == "https://course.example.edu/transformer_by_hand.whl"
        )
        assert (
            'pip install "https://course.example.edu/transformer_by_hand.whl"'
            in zf.read("README.txt").decode()
        )
    monkeypatch.setenv("BYHAND_SOURCE", "git+https://github.com/<org>/<repo>#subdirectory=student")
    with pytest.raises(HandoutError, match="placeholder"):
        handout(tmp_path / "b.zip")


@pytest.mark.slow
def test_exchange_release_and_fetch_with_the_generated_config(tmp_path, monkeypatch):
    """Does `nbgrader release_assignment` work with the generated config (course id set) the first
    time, from a shell whose PATH lacks the venv (nbgrader runs `alembic` from PATH to create its
    gradebook), and does a student's `nbgrader fetch_assignment` get exactly the student notebook?"""
    import os

    venv_bin = str(Path(sys.executable).parent)
    monkeypatch.setenv(
        "PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    )
    root, exchange = tmp_path / "course", tmp_path / "exchange"
    assemble(root, exchange=exchange)
    config = (root / "nbgrader_config.py").read_text()
    assert f"course_id = {course.COURSE_ID!r}" in config and str(exchange) in config
    lesson = course.lessons()[0]
    release_to_exchange([lesson], course=root)
    outbound = exchange / course.COURSE_ID / "outbound" / lesson / f"{lesson}.ipynb"
    assert outbound.read_bytes() == (course.NOTEBOOKS / f"{lesson}.ipynb").read_bytes()
    student = tmp_path / "student"
    student.mkdir()
    listed = subprocess.run(
        [*NBGRADER, "list", f"--Exchange.root={exchange}", f"--course={course.COURSE_ID}"],
        cwd=student,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert lesson in listed.stdout + listed.stderr, listed.stdout + listed.stderr
    fetched = subprocess.run(
        [
            *NBGRADER,
            "fetch_assignment",
            lesson,
            f"--Exchange.root={exchange}",
            f"--course={course.COURSE_ID}",
        ],
        cwd=student,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert fetched.returncode == 0, fetched.stderr[-2000:]
    got = next(student.rglob(f"{lesson}.ipynb"))
    assert got.read_bytes() == (course.NOTEBOOKS / f"{lesson}.ipynb").read_bytes()


def _site_build():
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_build", course.ROOT / "site" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _answer_lines(nb) -> set:
    """The reference answers' own lines (not the stub, not blank, not a signature the student gets)."""
    out = set()
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            body = re.search(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", cell.source, re.S)
            for line in (body.group(1) if body else "").splitlines():
                if len(line.strip()) > 12:
                    out.add(line.strip())
    return out


def test_the_graded_class_site_has_no_reference_answer(monkeypatch):
    """`make book ANSWERS=0`: does every lesson page (both languages) hold the student's blank cells
    instead of the reference answers, no "Show solution" toggle, and no test cell's output; and does
    the self-learners' site (the default) keep every answer?"""
    import nbformat

    site = _site_build()
    for lesson in course.lessons():
        solution = nbformat.read(course.SOLUTIONS / f"{lesson}.ipynb", as_version=4)
        student = nbformat.read(course.NOTEBOOKS / f"{lesson}.ipynb", as_version=4)
        answers = _answer_lines(solution) - {
            line.strip() for c in student.cells for line in c.source.splitlines()
        }
        assert answers, lesson
        monkeypatch.setattr(site, "ANSWERS", True)
        kept = "\n".join(c.source for c in site.site_notebook(solution, lesson, True).cells)
        assert all(line in kept for line in answers), f"{lesson}: the self-learners' site lost answers"
        monkeypatch.setattr(site, "ANSWERS", False)
        for lang in ("", "zh_CN"):
            if lang and not (course.NOTEBOOKS / lang / f"{lesson}.ipynb").exists():
                continue
            page = site.site_notebook(solution, lesson, True, lang)
            cells = [c for c in page.cells if c.metadata.get("nbgrader", {}).get("solution")]
            assert len(cells) == sum(
                bool(c.metadata.get("nbgrader", {}).get("solution")) for c in solution.cells
            )
            # the answer cells (prose may name a call an answer makes), their outputs
            text = "\n".join(c.source for c in cells) + json.dumps([c.get("outputs") for c in cells])
            leaked = [line for line in answers if line in text]
            assert not leaked, f"{lesson} {lang}: reference answer lines on the graded site: {leaked[:3]}"
            assert site.SHOW not in "".join(c.source for c in page.cells[2:]), lesson
            for cell in page.cells:
                meta = cell.metadata.get("nbgrader", {})
                if cell.cell_type == "code" and (meta.get("grade") or meta.get("solution")):
                    assert not cell.outputs, f"{lesson}: a test or answer cell's output is shown"
