"""The instructor's day after `make grade`, in a real browser (Debian's Chromium via Playwright):

- nbgrader's formgrader, started in the grading output folder (what `make formgrader` does), lists
  every submission with its autograded scores, opens each one (no HTTP 500), and takes a manual
  grade and a comment on a written answer; the next `make grade` (resuming: no notebook re-run)
  puts both into grades.csv, summary.csv and the student's feedback page, and nbgrader's own
  `nbgrader export` agrees with summary.csv;
- feedback pages and the class report escape everything a submission controls (exception
  messages, printed output, markdown, cell source, cell tags, file and student names): a hostile
  submission's markup runs nowhere, and no page makes an external request;
- feedback pages typeset their math offline (local MathJax), the ungradable page is styled;
- the report counts whole students, links every feedback page, separates knock-on failures.
"""

from __future__ import annotations

import csv
import html
import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from browser import NetworkLog, free_port, kill_tree, require_chromium, screenshot_path, serve
from test_lab import wait_until_up

from autograder.classroom import grade_class
from autograder.outcomes import safe_name
from examples.build import CLASS

pytest_plugins = ["conftest_browser"]

LESSON = "01_attention"
JUPYTER = Path(sys.executable).parent / "jupyter"
NBGRADER = Path(sys.executable).parent / "nbgrader"
# Markup in every place a submission controls; each payload would leave a trace if it ran.
PWN = (
    "<script>window.__pwned='{n}';document.title='pwned'</script><img src=x onerror=\"window.__pwned='{n}'\">"
)
EVE = "eve\"'<img src=x onerror=window.__pwned=1>"  # a student folder name with quotes and brackets
MALLORY = "mallory<svg onload=window.__pwned=2>"  # a student with no gradable notebook
MARKUP_FILE = "01_attention<img src=x onerror=window.__pwned=3>.ipynb"  # a second file, named with markup
COMMENT = "Right idea; say what saturation does to the gradient. <b>bold?</b>"


def _read(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def hostile_notebook() -> nbformat.NotebookNode:
    """alice's lesson 01 with markup in an exception message, printed output, HTML/JavaScript/SVG
    outputs, a fake image, markdown, code source, cell tags and the written answer."""
    nb = nbformat.read(CLASS / "alice" / f"{LESSON}.ipynb", as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if gid == "causal_mask_answer":
            cell.source = f"def causal_mask(seq_len):\n    raise ValueError({PWN.format(n='exception')!r})\n"
        elif gid == "padding_mask_answer":
            cell.source = (
                f"# {PWN.format(n='source')} </pre></div>\n"
                + cell.source
                + f"\nprint({PWN.format(n='print')!r})\n"
                "from IPython.display import HTML, Javascript, SVG, display\n"
                f"display(HTML({PWN.format(n='html')!r}))\n"
                "display(Javascript(\"window.__pwned='js'\"))\n"
                'display(SVG(\'<svg xmlns="http://www.w3.org/2000/svg"><script>window.__pwned="svg"</script></svg>\'))\n'
                "display({'image/png': '\" onerror=\"window.__pwned=5', 'text/plain': 'img'}, raw=True)\n"
            )
            cell.metadata["tags"] = ['x" onmouseover="window.__pwned=6']
        elif gid == "written_sqrt_dk":
            cell.source = (
                f"Because of the variance. {PWN.format(n='written')} [link](javascript:window.__pwned=7)"
            )
    md = nbformat.v4.new_markdown_cell(
        f"My notes {PWN.format(n='markdown')} <a href=x onclick=window.__pwned=8>x</a>"
    )
    nb.cells.insert(3, md)
    return nb


def add_students(folder):
    """This file's students in the shared class (tests/shared_class.py): the hostile student (with a
    second file named with markup) and one with no gradable notebook."""
    (folder / EVE).mkdir(parents=True)
    nbformat.write(hostile_notebook(), folder / EVE / f"{LESSON}.ipynb")
    shutil.copyfile(CLASS / "bob" / f"{LESSON}.ipynb", folder / EVE / MARKUP_FILE)
    (folder / MALLORY).mkdir()
    (folder / MALLORY / "notes<img src=x onerror=window.__pwned=9>.ipynb").write_text("{}")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """alice (perfect), bob (blank), erin (mistakes), a hostile student and one with no notebook,
    lesson 01 only, graded for real: (class folder, output folder)."""
    root = tmp_path_factory.mktemp("class")
    for student in ("alice", "bob", "erin"):
        (root / student).mkdir()
        shutil.copyfile(CLASS / student / f"{LESSON}.ipynb", root / student / f"{LESSON}.ipynb")
    add_students(root)
    out = root.parent / (root.name + "-out")
    result = grade_class(root, out, workers=2, quiet=True)
    from autograder.record.report import write_report

    write_report(out, result["graded"])
    return root, out


@pytest.fixture(scope="module")
def formgrader(graded):
    """nbgrader's formgrader: a Jupyter server started in the output folder, as `make formgrader`
    does. Yields (base URL, token)."""
    require_chromium()
    _, out = graded
    port, token = free_port(), secrets.token_hex(16)
    work = out.parent / "jupyter-home"
    env = dict(
        os.environ,
        JUPYTER_RUNTIME_DIR=str(work / "runtime"),
        JUPYTER_CONFIG_DIR=str(work / "config"),
        JUPYTER_DATA_DIR=str(work / "data"),
        JUPYTER_PATH=str(out / "formgrader_assets" / "share"),  # as `make formgrader` sets it
    )
    cmd = [
        str(JUPYTER),
        "server",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={out}",
    ]
    if os.getuid() == 0:
        cmd.append("--allow-root")
    work.mkdir(exist_ok=True)
    log = (work / "server.log").open("w")
    proc = subprocess.Popen(cmd, cwd=out, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(f"{base}/api/status?token={token}", proc)
        yield base, token
    except Exception:
        log.flush()
        print((work / "server.log").read_text(errors="replace")[-4000:])
        raise
    finally:
        kill_tree(proc)
        log.close()


def _api(page, base, path):
    return page.evaluate("async (u) => (await fetch(u)).json()", f"{base}{path}")


def test_formgrader_lists_grades_and_takes_a_manual_grade_and_comment(graded, formgrader, chromium):
    """Does formgrader list every submission with its autograded score, open each one, and take a
    manual grade and a comment that the next `make grade` (resumed, nothing re-run) puts into
    grades.csv, summary.csv and the feedback page?"""
    root, out = graded
    base, token = formgrader
    page = chromium.new_page(viewport={"width": 1300, "height": 1000})
    NetworkLog.attach(page)  # formgrader's own page asks a CDN for MathJax: blocked, not needed
    try:
        page.goto(f"{base}/formgrader?token={token}")
        page.wait_for_url("**/formgrader/manage_assignments*")
        row = page.locator("tr", has=page.locator(f"text={LESSON}")).first
        row.wait_for(timeout=30_000)
        assert "4" in row.inner_text(), f"formgrader's assignment row: {row.inner_text()}"  # 4 submitted
        page.goto(f"{base}/formgrader/gradebook/{LESSON}/{LESSON}")
        page.locator("a.name-shown", has_text="alice").wait_for(state="attached", timeout=30_000)
        subs = {
            s["student"]: s
            for s in _api(page, base, f"/formgrader/api/submitted_notebooks/{LESSON}/{LESSON}")
        }
        assert set(subs) == {"alice", "bob", "erin", EVE}, sorted(subs)
        expected = {r["student"]: float(r["points"]) for r in _read(out / "summary.csv") if r["lesson"]}
        for student, sub in subs.items():
            assert sub["score"] == expected[student], (
                student,
                "got",
                sub["score"],
                "expected",
                expected[student],
            )
            assert sub["max_score"] == 13, sub
        # the written answers need grading; a blank notebook (all 0, stubs left) does not
        assert subs["alice"]["needs_manual_grade"] and not subs["bob"]["needs_manual_grade"], subs
        shown = page.locator("td.score").all_inner_texts()
        assert any(t.replace(" ", "") == "10/13" for t in shown), f"formgrader's score column: {shown}"
        for student, sub in subs.items():  # every submission opens (the 500 was a missing file)
            response = page.goto(f"{base}/formgrader/submissions/{sub['id']}/")
            assert response.status == 200, (student, response.status)
        page.goto(f"{base}/formgrader/submissions/{subs['alice']['id']}/")
        score = page.locator("input.score#written_sqrt_dk")
        score.wait_for(timeout=30_000)
        page.wait_for_function(  # formgrader's own models fill in the autograded score
            "() => document.querySelector('input.score#scaled_dot_product_attention').placeholder === '3'"
        )
        assert "For the grader" in page.inner_text("body")  # the rubric is next to the answer
        with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url and r.request.method == "PUT"):
            score.fill("1.5")
            score.press("Tab")
        comment = page.locator("textarea#written_sqrt_dk-comment")
        with page.expect_response(
            lambda r: "/formgrader/api/comment/" in r.url and r.request.method == "PUT"
        ):
            comment.fill(COMMENT)
            comment.press("Tab")
        page.screenshot(path=str(screenshot_path("formgrader-manual-grade")), full_page=False)
    finally:
        page.close()

    states = {p: p.stat().st_mtime_ns for p in (out / ".state").glob("*__*.json")}
    grade_class(root, out, workers=2, quiet=True)  # the next `make grade`
    assert {p: p.stat().st_mtime_ns for p in (out / ".state").glob("*__*.json")} == states, (
        "the notebooks were graded again: manual grades must come back without re-running them"
    )
    rows = {(r["student"], r["question"]): r for r in _read(out / "grades.csv")}
    written = rows[("alice", "written_sqrt_dk")]
    assert float(written["points"]) == 1.5 and written["status"] == "failed", written
    assert "graded by hand: 1.5 / 2 points" in written["message"] and COMMENT in written["message"], written
    assert rows[("alice", "written_masked_row")]["status"] == "needs grading"
    summary = {r["student"]: r for r in _read(out / "summary.csv") if r["lesson"]}
    assert float(summary["alice"]["points"]) == 11.5 and summary["alice"]["status"] == "needs grading"
    page_html = (out / "feedback" / "alice" / f"{LESSON}.html").read_text(encoding="utf-8")
    assert "graded by hand: 1.5 / 2 points" in page_html and "&lt;b&gt;bold?&lt;/b&gt;" in page_html
    assert "11.5 / 13 points" in page_html
    # nbgrader's own export reads the same gradebook and agrees
    export = out.parent / "nbgrader-export.csv"
    proc = subprocess.run(
        [str(NBGRADER), "export", f"--to={export}"], cwd=out, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = {r["student_id"]: float(r["score"]) for r in _read(export)}
    assert theirs["alice"] == 11.5 and theirs["erin"] == float(summary["erin"]["points"]), theirs


def _open(chromium, url):
    page = chromium.new_page(viewport={"width": 1200, "height": 900})
    page.add_init_script(
        "window.__csp = []; document.addEventListener('securitypolicyviolation',"
        " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
    )
    log = NetworkLog.attach(page)
    response = page.goto(url)
    page.wait_for_load_state("load")
    return page, log, response


def _no_markup_ran(page, where):
    state = page.evaluate(
        """() => ({pwned: window.__pwned === undefined ? null : String(window.__pwned),
                   title: document.title, csp: window.__csp,
                   handlers: [...document.querySelectorAll('*')].flatMap(e => [...e.attributes]
                       .filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name)),
                   scripts: [...document.scripts].map(s => s.src || 'inline: ' + s.text.slice(0, 60))})"""
    )
    assert state["pwned"] is None and state["title"] != "pwned", (where, state)
    assert not state["handlers"], (where, "event handlers in the DOM", state["handlers"])
    assert all("/_assets/" in s for s in state["scripts"]), (where, "scripts", state["scripts"])
    assert not state["csp"], (where, "the page tried something its policy forbids", state["csp"])
    return state


@pytest.mark.gate  # the gate's one browser check: a hostile page and the class report, in Chromium
def test_pages_escape_what_a_submission_controls(shared_class, chromium):
    """Does no markup from a hostile submission (exception message, print, HTML/JS/SVG outputs,
    markdown, code, tags, written answer, file and student names) run in a feedback page or the
    class report, with nothing requested from outside? (The shared class: attacks included.)"""
    out = shared_class.out
    eve = out / "feedback" / safe_name(EVE) / f"{LESSON}.html"
    text = html.unescape(eve.read_text(encoding="utf-8"))
    for kind in ("exception", "print", "source", "written", "markdown"):  # shown, as text
        assert f"window.__pwned='{kind}'" in text, kind
    with serve(out) as base:
        for rel in (
            f"feedback/{safe_name(EVE)}/{LESSON}.html",
            "report/index.html",
            f"feedback/alice/{LESSON}.html",
        ):
            page, log, response = _open(chromium, f"{base}/{rel}")
            try:
                assert response.status == 200, rel
                if rel.startswith("feedback"):
                    page.wait_for_function(
                        "() => window.MathJax && MathJax.startup && MathJax.startup.promise"
                    )
                    page.evaluate("() => MathJax.startup.promise")
                _no_markup_ran(page, rel)
                body = page.inner_text("body")
                page.screenshot(path=str(screenshot_path("escape-" + rel.split("/")[0])), full_page=False)
            finally:
                page.close()
            assert not log.external and not log.failed and not log.page_errors, (rel, log)
            if rel.startswith("report"):
                assert EVE in body and MALLORY in body, "the report must show the names, as text"
            elif safe_name(EVE) in rel:
                assert "<script>window.__pwned='exception'" in body  # the exception message, as text
                assert "also found" in body and MARKUP_FILE in body  # the file name, as text


def test_feedback_pages_typeset_math_offline(graded, chromium):
    """Does a feedback page typeset its math with the local MathJax, nothing fetched from outside,
    and is the page of an ungradable notebook styled?"""
    _, out = graded
    with serve(out) as base:
        page, log, _ = _open(chromium, f"{base}/feedback/alice/{LESSON}.html")
        try:
            page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
            page.evaluate("() => MathJax.startup.promise")
            typeset = page.locator("mjx-container").count()
            body = page.inner_text("body")
        finally:
            page.close()
    assert typeset > 20, f"only {typeset} formulas typeset"
    assert "$\\sqrt{d_k}$" not in body and "\\sqrt" not in body, "raw TeX left on the page"
    assert not log.external and not log.failed, (log.external, log.failed)
    plain = (out / "feedback" / "bob" / f"{LESSON}.html").read_text(encoding="utf-8")
    assert "tbb-summary" in plain


def test_formgrader_typesets_math_offline(graded, formgrader, chromium):
    """Does formgrader's submission page (started as `make formgrader` starts it) typeset the
    lesson's math with the MathJax 2 in the output folder, nothing fetched from outside?"""
    _, out = graded
    base, token = formgrader
    page = chromium.new_page()
    log = NetworkLog.attach(page)
    try:
        page.goto(f"{base}/formgrader?token={token}")
        page.wait_for_url("**/formgrader/manage_assignments*")
        subs = {
            s["student"]: s
            for s in _api(page, base, f"/formgrader/api/submitted_notebooks/{LESSON}/{LESSON}")
        }
        page.goto(f"{base}/formgrader/submissions/{subs['alice']['id']}/")
        page.wait_for_function("() => window.MathJax && MathJax.Hub && MathJax.loaded", timeout=60_000)
        page.wait_for_function(
            "() => document.querySelectorAll('.MJXc-display, .mjx-chtml').length > 20", timeout=60_000
        )
        typeset = page.locator(".mjx-chtml").count()
    finally:
        page.close()
    assert typeset > 20, f"only {typeset} formulas typeset"
    assert not log.external, log.external


def test_ungradable_page_is_styled(tmp_path, chromium):
    """Is the page of a notebook that could not be read a styled page (not bare HTML)?"""
    from autograder.collect.submissions import Submission
    from autograder.outcomes import Row
    from autograder.record.feedback import plain_page

    sub = Submission(EVE, LESSON, None)
    rows = [Row(EVE, LESSON, "", 0, 13, "ungradable", PWN.format(n="ungradable"))]
    (tmp_path / "p.html").write_text(plain_page(sub, rows), encoding="utf-8")
    with serve(tmp_path) as base:
        page, log, _ = _open(chromium, f"{base}/p.html")
        try:
            _no_markup_ran(page, "ungradable page")
            font = page.evaluate("() => getComputedStyle(document.querySelector('.tbb-summary')).fontFamily")
            width = page.evaluate("() => getComputedStyle(document.querySelector('.tbb-summary')).maxWidth")
        finally:
            page.close()
    assert "system-ui" in font and width == "1000px", (font, width)
    assert not log.external


def test_report_counts_whole_students_and_links_feedback(graded, chromium):
    """Does the report say "N students" right, give mean and median per lesson, link every
    feedback page (each link opens), and list knock-on failures apart from real mistakes?"""
    _, out = graded
    html_text = (out / "report" / "index.html").read_text(encoding="utf-8")
    assert "5 students" in html_text and "1 lesson" in html_text and "1 lessons" not in html_text
    lessons = _read(out / "report" / "lessons.csv")
    scores = [float(r["points"]) for r in _read(out / "report" / "scores.csv") if r["lesson"] == LESSON]
    assert len(scores) == 4 and int(lessons[0]["submitted"]) == 4, scores
    import statistics

    assert float(lessons[0]["mean"]) == pytest.approx(statistics.mean(scores), abs=0.01)
    assert float(lessons[0]["median"]) == statistics.median(scores)
    kinds = {(r["question"], r["kind"]) for r in _read(out / "report" / "mistakes.csv")}
    # erin's MultiHeadAttention runs the reference attention in place of her failing one (one mistake
    # costs one question: byhand._depends), so it passes and is no knock-on
    assert ("causal_mask", "mistake") in kinds and not any(q == "MultiHeadAttention" for q, _ in kinds), kinds
    with serve(out) as base:
        page, log, _ = _open(chromium, f"{base}/report/index.html")
        try:
            links = page.eval_on_selector_all("td a", "as => as.map(a => a.href)")
            for href in links:
                assert page.request.get(href).status == 200, href
        finally:
            page.close()
    feedback = [h for h in links if "/feedback/" in h]  # the others: the similarity table's pairs
    assert len(feedback) == 4, links  # alice, bob, erin, eve: one lesson each (mallory has none)
    assert not log.external and not log.failed


def test_report_histogram_counts_are_integers(graded):
    """Are the score histogram's y ticks whole numbers of students?"""
    from byhand.i18n import plural

    one, many = plural(1, "{n} student", "{n} students"), plural(2, "{n} student", "{n} students")
    assert (one, many) == ("1 student", "2 students"), f"got {(one, many)}"
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots()
    ax.hist([3, 10, 10], bins=range(0, 15))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.canvas.draw()
    ticks = ax.get_yticks()
    plt.close(fig)
    assert all(float(t).is_integer() for t in ticks), ticks


def test_nbgrader_layout_is_what_formgrader_reads(graded):
    """Is the output folder an nbgrader course root: config with the course id, source/, release/,
    submitted/ and autograded/ with matching timestamps, needs_manual_grade cleared for autograded
    cells, checksums on every registered cell?"""
    from nbgrader.api import Gradebook
    from nbgrader.utils import parse_utc

    from autograder import course

    _, out = graded
    config = (out / "nbgrader_config.py").read_text()
    assert f"course_id = {course.COURSE_ID!r}" in config
    for step in ("source", "release"):
        assert (out / step / LESSON / f"{LESSON}.ipynb").is_file(), step
    with Gradebook(f"sqlite:///{out}/gradebook.db") as gb:
        cells = gb.find_notebook(LESSON, LESSON)
        graded_ids = set(course.questions(LESSON)) | set(course.manual_questions(LESSON))
        assert graded_ids <= {c.name for c in cells.source_cells}
        assert all(c.checksum for c in cells.source_cells), "cells registered without checksum"
        for sub in gb.assignment_submissions(LESSON):
            stamp = (out / "submitted" / sub.student_id / LESSON / "timestamp.txt").read_text().strip()
            assert parse_utc(stamp) == sub.timestamp, (sub.student_id, stamp, sub.timestamp)
            assert (out / "autograded" / sub.student_id / LESSON / f"{LESSON}.ipynb").is_file()
            for grade in sub.notebooks[0].grades:
                if grade.name in course.questions(LESSON):
                    assert not grade.needs_manual_grade or grade.manual_score is not None, grade.name
    fixed = json.loads(json.dumps(course.comment_targets(LESSON)))
    assert fixed["scaled_dot_product_attention_answer"] == "scaled_dot_product_attention"
    assert fixed["written_sqrt_dk"] == "written_sqrt_dk"


def test_report_counts_a_knock_on_apart():
    """Does the report count a failure that follows from a piece the question keeps (BUILDS_ON) as a
    knock-on, apart from the mistakes?"""
    from autograder.outcomes import Graded, Row
    from autograder.record.report import numbers

    rows = [
        Row("s", "07_decoder", "GPT", 0, 3, "failed", "m"),
        Row("s", "07_decoder", "GPT_init", 0, 1, "failed", "m", knock_on=True),
    ]
    n = numbers([Graded("s", "07_decoder", rows, hints=[("GPT", "no ln_f"), ("GPT_init", "first make GPT")])])
    assert n["mistakes"] == {("07_decoder", "GPT", "no ln_f"): 1}, n["mistakes"]
    assert n["knock_ons"] == {("07_decoder", "GPT_init", "first make GPT"): 1}, n["knock_ons"]
