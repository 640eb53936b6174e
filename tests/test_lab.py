"""What a student sees in JupyterLab, in a real browser (Debian's Chromium driven by Playwright).

`make lab`'s server is started headless on a free port with a token, on a temporary copy of
notebooks/; the student notebook of lesson 01 is opened and run (its first self-check must report
the unfinished exercise), the nbgrader Validate button must be in the notebook toolbar, and a
notebook with the example answers filled in must validate through that button.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser import ROOT, NetworkLog, free_port, kill_tree, require_chromium, screenshot_path

from examples.answers.a01_attention import ALL_OK
from examples.written import written_for

pytest_plugins = ["conftest_browser"]

LESSON = "01_attention"
ANSWERED = f"answered/{LESSON}.ipynb"
JUPYTER = Path(sys.executable).parent / "jupyter"
# User settings of the throwaway server: every cell in the DOM (no virtual scrolling, so outputs
# can be found), and no news or update check (nothing fetched from outside).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "checkForUpdates": False,
        "fetchNews": "false",
    },
}


KERNEL_IDLE = re.compile(r"^(?!No Kernel).+ \| Idle$")


def first_graded_name(nb: dict) -> str:
    """The first self-check of a notebook (its grade_id is the graded name)."""
    return next(
        c["metadata"]["nbgrader"]["grade_id"]
        for c in nb["cells"]
        if c["metadata"].get("nbgrader", {}).get("grade") and not c["metadata"]["nbgrader"].get("solution")
    )


def with_answers(nb: dict, answers: dict) -> dict:
    """The student notebook with its answer cells (grade_id -> code) filled in."""
    nb = json.loads(json.dumps(nb))
    filled = 0
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution") and meta.get("grade_id") in answers:
            cell["source"] = answers[meta["grade_id"]]
            filled += 1
    assert filled == len(answers), f"filled {filled} answer cells, the example answers have {len(answers)}"
    return nb


def wait_until_up(url: str, proc, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"jupyter lab did not answer {url} within {timeout} s")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """`make lab`'s server, headless: (base URL, token, notebook dir). Stopped at teardown."""
    require_chromium()
    work = tmp_path_factory.mktemp("lab")
    notebooks = work / "notebooks"
    shutil.copytree(ROOT / "notebooks", notebooks)
    student = json.loads((notebooks / f"{LESSON}.ipynb").read_text(encoding="utf-8"))
    (notebooks / ANSWERED).parent.mkdir()
    (notebooks / ANSWERED).write_text(
        json.dumps(with_answers(student, {**ALL_OK, **written_for(LESSON, "alice")}), indent=1),
        encoding="utf-8",
    )
    for name, value in LAB_SETTINGS.items():
        path = work / "settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value), encoding="utf-8")

    port, token = free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(work / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(work / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(work / "runtime"),
    )
    cmd = [
        str(JUPYTER),
        "lab",
        f"--notebook-dir={notebooks}",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if os.getuid() == 0:
        cmd.append("--allow-root")
    log = (work / "lab.log").open("w")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(f"{base}/api/status?token={token}", proc)
        yield base, token, notebooks
    except Exception:
        log.flush()
        print((work / "lab.log").read_text(errors="replace")[-4000:])
        raise
    finally:
        kill_tree(proc)
        log.close()


@pytest.fixture
def browser(chromium):
    return chromium


def open_notebook(browser, lab, path: str):
    """Open a notebook in JupyterLab and wait for its kernel to be idle: (page, network log)."""
    base, token, _ = lab
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    log = NetworkLog.attach(page)
    # a workspace of its own (reset): no tab of an earlier test is restored next to this one
    page.goto(
        f"{base}/lab/workspaces/{secrets.token_hex(4)}/tree/{path}?reset&token={token}",
        wait_until="domcontentloaded",
    )
    # the status bar names the kernel once it runs ("No Kernel | Initializing" before)
    page.locator(".jp-StatusBar-Widget").get_by_text(KERNEL_IDLE).wait_for(timeout=90_000)
    tab = page.locator(".jp-mod-current.lm-TabBar-tab[title*='Path: ']").first
    title = tab.get_attribute("title") or ""
    assert f"Path: {path}" in title, f"the current tab is not {path}: {title}"
    return page, log


def validate_button(page):
    """nbgrader's Validate button in the toolbar of the notebook on screen."""
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Toolbar .validate-button")


def test_lab_runs_the_student_notebook_and_self_check_reports_unfinished(browser, lab):
    """Does Run All Cells stop at the first self-check, which says the exercise is not done yet,
    and does nbgrader's Validate reject the unfinished notebook?"""
    student = json.loads((lab[2] / f"{LESSON}.ipynb").read_text(encoding="utf-8"))
    name = first_graded_name(student)
    page, log = open_notebook(browser, lab, f"{LESSON}.ipynb")
    try:
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.locator("li.lm-Menu-item:has(> .lm-Menu-itemLabel:text-is('Run All Cells'))").click()
        report = page.locator(".jp-OutputArea-output", has_text="not done yet").first
        report.wait_for(timeout=120_000)
        assert f"{name}: not done yet" in report.inner_text(), (
            f"the first 'not done yet' report is not about the first exercise {name}: {report.inner_text()[:300]}"
        )
        report.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshot_path(f"lab-{LESSON}-self-check")))
        # the same unfinished notebook does not pass nbgrader's Validate
        validate_button(page).click()
        verdict = page.locator(".validation-success, .validation-failed").first
        verdict.wait_for(timeout=150_000)
        assert "not done yet" in verdict.inner_text(), (
            f"Validate on the unfinished notebook should list the exercises not done yet: {verdict.inner_text()[:500]}"
        )
        assert not log.external, f"JupyterLab requested outside 127.0.0.1: {log.external}"
    finally:
        page.close()


def test_answered_notebook_validates_with_the_nbgrader_button(browser, lab):
    """Is the nbgrader Validate button in the notebook toolbar, and does a notebook with the answers
    filled in pass it?"""
    page, log = open_notebook(browser, lab, ANSWERED)
    try:
        button = validate_button(page)
        assert button.count() == 1, "the nbgrader Validate button is missing from the notebook toolbar"
        assert "Validate" in button.inner_text()
        button.click()
        verdict = page.locator(".validation-success, .validation-failed").first
        verdict.wait_for(timeout=150_000)
        page.screenshot(path=str(screenshot_path(f"lab-{LESSON}-validate")))
        text = verdict.inner_text()
        assert "passes all the tests" in text, f"Validate on the answered notebook says: {text[:500]}"
        assert not log.external, f"JupyterLab requested outside 127.0.0.1: {log.external}"
    finally:
        page.close()
