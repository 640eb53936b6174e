"""Every way of publishing the course: the notebooks and pages install the checks from BYHAND_SOURCE
(or say loudly that they cannot), releases go lesson by lesson, and a release that hands out a graded
answer as given code (lesson 12's given code holds lesson 09's SwiGLU answer) is refused unless forced,
naming both lessons."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import re
import zipfile

import nbformat
import pytest

from autograder import course
from autograder.__main__ import main
from autograder.tooling import publish
from autograder.tooling.handout import HandoutError, handout
from autograder.tooling.student import GIT_URL

URL = "https://course.example.edu/downloads/transformer_by_hand-0.2.3-py3-none-any.whl"


def _site():
    spec = importlib.util.spec_from_file_location("site_build_publish", course.ROOT / "site" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _byhand_line(nb) -> str:
    setup = next(c for c in nb.cells if "setup" in (c.metadata.get("tags") or []))
    return re.search(r'^BYHAND = "([^"]*)"', setup.source, re.M).group(1)


def test_a_lesson_handing_out_an_earlier_answer_alone_is_refused_naming_both():
    with pytest.raises(publish.ReleaseRefused) as refused:
        publish.check_release(["12_training"])
    said = str(refused.value)
    assert "12_training" in said and "09_modern_block" in said, f"got {said!r}, expected both lessons named"
    forced = publish.check_release(["12_training"], force=True)
    assert forced and "09_modern_block" in forced[0], f"got {forced}, expected the forced leak said"
    assert publish.check_release(["01_attention", "02_layernorm"]) == []
    assert publish.check_release(course.lessons()) == [], "every lesson at once hands out nothing new"


def test_a_lesson_whose_deadline_has_not_passed_is_not_handed_out_by_a_later_one(tmp_path):
    config = tmp_path / "course.toml"
    config.write_text(
        'deadline = "2030-01-01 00:00"\n[deadlines]\n"07_decoder" = "2026-01-10 23:59"\n'
        '"09_modern_block" = "2026-03-01 23:59"\n'
    )
    now = dt.datetime(2026, 2, 1, tzinfo=dt.timezone.utc)
    with pytest.raises(publish.ReleaseRefused, match=r"12_training.*09_modern_block.*has not passed"):
        publish.check_release(["09_modern_block", "12_training"], config=config, now=now)
    # lesson 07 is due: lesson 09 alone may hand out its answer; lesson 09's answer once it is due
    assert publish.check_release(["09_modern_block"], config=config, now=now) == []
    later = dt.datetime(2026, 3, 5, tzinfo=dt.timezone.utc)
    assert publish.check_release(["12_training"], config=config, now=later) == []


@pytest.mark.slow  # builds a handout zip and its wheel: about 3 s of CPU
def test_make_handout_refuses_a_leaking_release_and_hands_out_chosen_lessons(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("BYHAND_SOURCE", raising=False)
    with pytest.raises(HandoutError, match="09_modern_block"):
        handout(tmp_path / "x.zip", ["12_training"])
    assert main(["handout", "12", "--out", str(tmp_path / "y.zip")]) == 2
    err = capsys.readouterr().err
    assert "12_training" in err and "09_modern_block" in err, err
    assert not (tmp_path / "y.zip").exists()
    assert main(["handout", "01", "--out", str(tmp_path / "z.zip")]) == 0
    assert "BYHAND_SOURCE is not set" in capsys.readouterr().err, (
        "expected the handout to say where it installs from"
    )
    with zipfile.ZipFile(tmp_path / "z.zip") as zf:
        notebooks = sorted(n for n in zf.namelist() if n.endswith(".ipynb"))
        readme = zf.read("README.txt").decode()
        names = zf.namelist()
    assert notebooks == ["01_attention.ipynb", "zh_CN/01_attention.ipynb"], notebooks
    assert "12_training" not in readme
    # the README's install line works from every folder that holds notebooks: the wheel is beside them
    (wheel,) = set(re.findall(r'pip install "([^"]+\.whl)"', readme))
    for folder in {n.rpartition("/")[0] for n in notebooks}:
        assert f"{folder}/{wheel}".lstrip("/") in names, (
            f"got no {wheel} beside the notebooks of {folder or '.'}/"
        )
    assert "--index-url https://download.pytorch.org/whl/cpu" in readme, "expected a CPU-only install"


def test_without_byhand_source_each_publishing_command_says_so_loudly(monkeypatch):
    monkeypatch.delenv("BYHAND_SOURCE", raising=False)
    for command in ("book", "handout", "exchange", "release"):
        said = publish.source_warning(command)
        assert said and "BYHAND_SOURCE" in said and f"make {command} BYHAND_SOURCE=" in said, said
    monkeypatch.setenv("BYHAND_SOURCE", GIT_URL)
    assert publish.source_warning("book"), "the placeholder given as BYHAND_SOURCE installs nothing either"
    monkeypatch.setenv("BYHAND_SOURCE", URL)
    assert publish.source_warning("book") is None


def test_the_site_says_it_and_refuses_a_leaking_graded_site(monkeypatch, capsys, tmp_path):
    site = _site()
    monkeypatch.delenv("BYHAND_SOURCE", raising=False)
    monkeypatch.setattr(site, "build", lambda out: out / "index.html")
    site.main(["--out", str(tmp_path / "s")])
    assert "BYHAND_SOURCE is not set" in capsys.readouterr().err, "make book without BYHAND_SOURCE is silent"
    with pytest.raises(SystemExit, match="09_modern_block"):
        site.main(["--no-answers", "--lessons", "12", "--out", str(tmp_path / "s")])
    site.main(["--no-answers", "--lessons", "12", "09", "07", "--out", str(tmp_path / "s")])
    assert site.lessons() == ["07_decoder", "09_modern_block", "12_training"]


def test_every_rendered_page_and_download_installs_from_byhand_source(monkeypatch, tmp_path):
    """Both languages: the lesson page's first cell (what the reader sees) and the served notebook."""
    site = _site()
    monkeypatch.setenv("BYHAND_SOURCE", URL)
    from autograder.tooling import translations

    lesson = "01_attention"
    solution = nbformat.read(course.SOLUTIONS / f"{lesson}.ipynb", as_version=4)
    pages = {
        "en": site.site_notebook(solution, lesson, True),
        "zh_CN": site.site_notebook(translations.translate(solution, lesson, "zh_CN"), lesson, True, "zh_CN"),
    }
    for lang, page in pages.items():
        assert _byhand_line(page) == URL, (
            f"{lang}: got the page's first cell installing from {_byhand_line(page)}"
        )
        note = page.cells[1].source
        assert f"pip install {URL}" in note and "whl/cpu" in note, f"{lang}: got the install note {note!r}"
    monkeypatch.setattr(site, "add_wheel", lambda downloads: downloads / "w.whl")
    written = site.write_downloads(tmp_path, [lesson], {"zh_CN": [lesson]})
    served = [p for p in written if p.suffix == ".ipynb"]
    assert len(served) == 2
    for path in served:
        assert _byhand_line(nbformat.read(path, as_version=4)) == URL, path
    index = site.index_page([(lesson, "t", "s", True)])
    assert f"pip install {URL}" in index, "expected the home page to give the one-line install"


def test_the_exchange_releases_the_chinese_notebook_beside_the_english(tmp_path, monkeypatch):
    """`nbgrader generate_assignment` stands in: the step after it puts every translation beside it."""
    from autograder.tooling import nbgrader_course

    monkeypatch.setenv("BYHAND_SOURCE", URL)
    lesson = "01_attention"
    calls = []

    def fake_run(cmd, cwd, **kwargs):
        calls.append(cmd)
        if "generate_assignment" in cmd:
            out = tmp_path / "release" / lesson
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{lesson}.ipynb").write_bytes((course.NOTEBOOKS / f"{lesson}.ipynb").read_bytes())

        class Done:
            returncode, stdout, stderr = 0, "", ""

        return Done()

    monkeypatch.setattr(nbgrader_course.subprocess, "run", fake_run)
    said = nbgrader_course.release_to_exchange([lesson], course=tmp_path)
    zh = tmp_path / "release" / lesson / "zh_CN" / f"{lesson}.ipynb"
    assert zh.exists(), f"got no {zh.relative_to(tmp_path)} in the released assignment"
    for path in (zh, tmp_path / "release" / lesson / f"{lesson}.ipynb"):
        assert _byhand_line(nbformat.read(path, as_version=4)) == URL, path
    assert json.loads(zh.read_text())["metadata"].get("language") == "zh_CN"
    assert "zh_CN/01_attention.ipynb" in said[0] and not any("WARNING" in s for s in said), said


def test_the_site_checker_finds_a_page_or_download_left_on_the_placeholder(tmp_path):
    """tests/site_sources.py on a planted site: a served notebook and a page that install from the
    placeholder are each reported; the same site installing from URL is clean."""
    from site_sources import wrong_sources

    def plant(source: str):
        nb = {
            "cells": [
                {"cell_type": "code", "metadata": {"tags": ["setup"]}, "source": [f'BYHAND = "{source}"\n']}
            ]
        }
        (tmp_path / "_downloads" / "ab12").mkdir(parents=True, exist_ok=True)
        (tmp_path / "_downloads" / "ab12" / "01_attention.ipynb").write_text(json.dumps(nb))
        (tmp_path / "zh_CN" / "lessons").mkdir(parents=True, exist_ok=True)
        shown = source.replace("<", "&lt;").replace(">", "&gt;")
        page = (
            '<div class="cell_input docutils container"><div class="highlight"><pre>'
            f'<span class="n">BYHAND</span> <span class="o">=</span> <span class="s2">&quot;{shown}&quot;</span>'
            "</pre></div></div>"
        )
        (tmp_path / "zh_CN" / "lessons" / "01_attention.html").write_text(page)

    plant(URL)
    assert wrong_sources(tmp_path, URL) == [], "got a site installing from URL reported"
    plant(GIT_URL)
    wrong = wrong_sources(tmp_path, URL)
    assert any("_downloads" in w for w in wrong) and any("zh_CN/lessons" in w for w in wrong), (
        f"got {wrong}, expected the download and the page reported"
    )


@pytest.mark.slow  # the whole site, both languages, through Sphinx
@pytest.mark.full  # 30 s; the site's build rarely changes, and make test-full builds and browses it whole
def test_make_book_without_answers_installs_from_byhand_source_everywhere(tmp_path):
    """`make book ANSWERS=0 BYHAND_SOURCE=URL` as a graded class runs it: every notebook the site
    serves (both languages) and every lesson page's first code cell install from URL, and no page or
    download shows the placeholder."""
    import os
    import subprocess
    import sys

    from site_sources import lesson_pages, served_notebooks, wrong_sources

    out = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, str(course.ROOT / "site" / "build.py"), "--no-answers", "--out", str(out)],
        cwd=course.ROOT,
        env={**os.environ, "BYHAND_SOURCE": URL},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"site/build.py failed:\n{done.stdout}\n{done.stderr}"
    lessons = len(list(course.SOLUTIONS.glob("*.ipynb")))
    translated = len(list((course.NOTEBOOKS / "zh_CN").glob("*.ipynb")))
    assert len(served_notebooks(out)) == lessons + translated, (
        f"got {len(served_notebooks(out))} served notebooks, expected {lessons} + {translated}"
    )
    assert len(lesson_pages(out)) == lessons + translated, f"got {len(lesson_pages(out))} lesson pages"
    wrong = wrong_sources(out, URL)
    assert wrong == [], f"got {wrong}, expected every served notebook and page to install from URL"
