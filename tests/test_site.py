"""The rendered course site in a real browser (Debian's Chromium driven by Playwright).

The site is built once (site/build.py, as `make book` does) into a temporary folder, served on
127.0.0.1, and every page is opened: nothing may be requested outside 127.0.0.1 and no request may
fail, all math is typeset, every image loads, reference answers stay hidden until their toggle is
clicked, hidden tests never reach the page. Screenshots go to build/artifacts/.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from browser import ROOT, NetworkLog, require_chromium, screenshot_path, serve

from autograder.tooling import translations

pytest_plugins = ["conftest_browser"]

SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
LESSONS = sorted(p.stem for p in SOLUTIONS.glob("*.ipynb"))
# The translated editions: the lessons whose translation is current get a page under <lang>/
EDITIONS = {
    lang: [
        n for n in LESSONS if translations.path_for(n, lang).exists() and translations.status(n, lang).current
    ]
    for lang in translations.LANGUAGES
}
EDITIONS = {lang: done for lang, done in EDITIONS.items() if done}
PAGES = (
    ["index", "search", "genindex"]
    + [f"lessons/{lesson}" for lesson in LESSONS]
    + [
        page
        for lang, done in EDITIONS.items()
        for page in [f"{lang}/index"] + [f"{lang}/lessons/{n}" for n in done]
    ]
)
HIDDEN_BLOCK = re.compile(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", re.S)

# After MathJax: no TeX delimiters or commands left in the page text (code blocks aside).
RAW_TEX = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\\[A-Za-z]{2,}|\$[^$\s][^$\n]*\$")

PAGE_STATE_JS = """
async () => {
  let mathjax = 'not on this page';
  if (document.querySelector('script[src*="mathjax"]')) {
    const t0 = Date.now();
    while (!(window.MathJax && MathJax.startup && MathJax.startup.promise) && Date.now() - t0 < 10000) {
      await new Promise(r => setTimeout(r, 50));
    }
    mathjax = (window.MathJax && MathJax.startup && MathJax.startup.promise) ? 'ran' : 'never started';
    if (mathjax === 'ran') await MathJax.startup.promise;
  }
  const imgs = [...document.images];
  imgs.forEach(i => { i.loading = 'eager'; });
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  const math = [...document.querySelectorAll('.math')];
  const article = document.body.cloneNode(true);
  article.querySelectorAll('pre, code, script, style, mjx-container, .highlight').forEach(e => e.remove());
  return {
    mathjax,
    images: imgs.map(i => ({src: i.currentSrc || i.src, width: i.naturalWidth})),
    math: math.length,
    untypeset: math.filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.slice(0, 80)),
    typeset: document.querySelectorAll('mjx-container').length,
    text: article.textContent,
  };
}
"""


def lesson_nb(lesson: str) -> nbformat.NotebookNode:
    return nbformat.read(SOLUTIONS / f"{lesson}.ipynb", as_version=4)


def solution_cells(nb) -> list:
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]


def image_outputs(nb) -> int:
    return sum(
        any(k.startswith("image/") for k in o.get("data", {}))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The site, built once from solutions/ exactly as `make book` builds it."""
    require_chromium()
    out = tmp_path_factory.mktemp("book") / "site"
    done = subprocess.run(
        [sys.executable, str(ROOT / "site" / "build.py"), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"site/build.py failed:\n{done.stdout}\n{done.stderr}"
    return out


@pytest.fixture(scope="session")
def base_url(site):
    with serve(site) as url:
        yield url


@pytest.fixture(scope="session")
def browser_context(site, chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    yield context
    context.close()


@pytest.fixture(scope="module")
def open_page(browser_context, base_url):
    """open_page('lessons/01_attention') -> (page, network log, page state after math and images).

    Each page is loaded once and shared by the checks that read it: a load typesets all of a
    lesson's math, seconds of CPU, and four checks read each lesson page. A check that clicks
    (the solution toggles) comes after the one that reads the page as loaded."""
    loaded = {}

    def _open(name: str):
        if name not in loaded:
            page = browser_context.new_page()
            log = NetworkLog.attach(page)
            page.goto(f"{base_url}/{name}.html", wait_until="load")
            state = page.evaluate(PAGE_STATE_JS)
            page.wait_for_load_state("networkidle")
            loaded[name] = (page, log, state)
        return loaded[name]

    yield _open
    for page, _, _ in loaded.values():
        page.close()


def test_every_built_page_is_checked(site):
    """Does the browser test visit every page the build produced?"""
    built = sorted(
        str(p.relative_to(site).with_suffix(""))
        for p in site.rglob("*.html")
        if not p.relative_to(site).parts[0].startswith("_")
    )
    assert built == sorted(PAGES), f"pages built: {built}; pages the test opens: {sorted(PAGES)}"


@pytest.mark.parametrize("name", PAGES)
def test_page_loads_offline_with_math_and_images(open_page, name):
    """Does the page load with no request outside 127.0.0.1, no failed request, no JS error,
    all math typeset and every image decoded?"""
    page, log, state = open_page(name)
    assert log.requests, "the browser made no request at all"
    assert not log.external, f"{name}: requests outside 127.0.0.1 (blocked): {log.external}"
    assert not log.failed, f"{name}: failed requests: {log.failed}"
    assert not log.page_errors, f"{name}: JavaScript errors: {log.page_errors}"
    assert state["mathjax"] != "never started", f"{name}: the page loads MathJax but it never started"
    assert not state["untypeset"], f"{name}: math not typeset by MathJax: {state['untypeset'][:5]}"
    raw = RAW_TEX.findall(state["text"])
    assert not raw, f"{name}: raw TeX left in the page text: {raw[:10]}"
    broken = [i["src"] for i in state["images"] if i["width"] == 0]
    assert not broken, f"{name}: images that did not load: {broken}"
    if name.startswith("lessons/"):
        nb = lesson_nb(name.split("/")[1])
        plots = image_outputs(nb)
        assert len(state["images"]) >= plots, (
            f"{name}: {len(state['images'])} images on the page, the notebook stores {plots} plots"
        )
        has_math = any("$" in c.source for c in nb.cells if c.cell_type == "markdown")
        if has_math:
            assert state["math"] > 0 and state["typeset"] >= state["math"], (
                f"{name}: the lesson writes math but the page shows {state['typeset']} typeset formulas "
                f"for {state['math']} math elements"
            )
        if plots and has_math:
            figure = page.locator(".cell_output img").first
            figure.scroll_into_view_if_needed()
            page.evaluate("window.scrollBy(0, -250)")
            page.screenshot(path=str(screenshot_path(f"site-{name.split('/')[1]}")), animations="disabled")
    if name == "index":
        page.screenshot(path=str(screenshot_path("site-index")), full_page=True, animations="disabled")


TYPOGRAPHIC = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def test_index_lists_every_lesson_with_what_it_teaches(open_page):
    """Does the home page link every lesson, with its title and its first paragraph?"""
    page, _, state = open_page("index")
    for lesson in LESSONS:
        link = page.locator(f'article a[href="lessons/{lesson}.html"]')
        assert link.count() >= 1, f"index: no link to lessons/{lesson}.html"
        first = next(c.source for c in lesson_nb(lesson).cells if c.cell_type == "markdown")
        title = next(line[2:].strip() for line in first.splitlines() if line.startswith("# "))
        # Sphinx sets apostrophes and quotes typographically (smartquotes)
        shown = link.first.inner_text().translate(TYPOGRAPHIC)
        assert title.replace("`", "") in shown, f"index: the link to {lesson} does not read {title!r}"
        paragraphs = [b for b in re.split(r"\n\s*\n", first) if b.strip() and not b.lstrip().startswith("#")]
        # the page text leaves code out (see PAGE_STATE_JS), so the expected words do too
        words = re.sub(r"[*$\\]", "", re.sub(r"`[^`]*`", " ", paragraphs[0])).split()[:6]
        assert " ".join(words) in " ".join(state["text"].translate(TYPOGRAPHIC).split()), (
            f"index: the summary of {lesson} (its first paragraph, starting {' '.join(words)!r}) is missing"
        )


@pytest.mark.parametrize("lesson", LESSONS)
def test_solutions_hidden_until_toggled(open_page, lesson):
    """Is every reference answer collapsed behind a "Show solution" toggle that opens it?"""
    page, _, _ = open_page(f"lessons/{lesson}")
    expected = len(solution_cells(lesson_nb(lesson)))
    toggles = page.locator("details:has(> summary:has-text('Show solution'))")
    assert toggles.count() == expected, f"{lesson}: {toggles.count()} solution toggles, expected {expected}"
    for i in range(toggles.count()):
        toggle = toggles.nth(i)
        body = toggle.locator(":scope > :not(summary)").first
        assert not body.is_visible(), f"{lesson}: solution {i + 1} is visible before its toggle is clicked"
        toggle.locator(":scope > summary").click()
        body.wait_for(state="visible", timeout=5000)
        if i == 0:
            toggle.screenshot(path=str(screenshot_path(f"site-{lesson}-solution")), animations="disabled")


@pytest.mark.parametrize("lesson", LESSONS)
def test_hidden_tests_and_markers_removed(open_page, lesson):
    """Does the page keep the self-checks but drop hidden tests and nbgrader markers?"""
    page, _, _ = open_page(f"lessons/{lesson}")
    text = page.locator("article").text_content()
    for marker in ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "BEGIN SOLUTION", "END SOLUTION"):
        assert marker not in text, f"{lesson}: the page shows {marker!r}"
    nb = lesson_nb(lesson)
    visible = "\n".join(HIDDEN_BLOCK.sub("", c.source) for c in nb.cells)
    hidden = {
        line.strip()
        for c in nb.cells
        if c.cell_type == "code"
        for block in HIDDEN_BLOCK.findall(c.source)
        for line in block.splitlines()
    }
    leaked = [line for line in hidden if line and line not in visible and line in text]
    assert not leaked, f"{lesson}: hidden test code on the page: {leaked[:5]}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_student_notebook_download(open_page, base_url, lesson):
    """Does the lesson page link its student notebook, byte for byte the one in notebooks/?"""
    page, _, _ = open_page(f"lessons/{lesson}")
    link = page.locator(f'article a.download[href$="/{lesson}.ipynb"]')
    assert link.count() >= 1, f"{lesson}: no download link to the student notebook {lesson}.ipynb"
    response = page.request.get(f"{base_url}/lessons/{link.first.get_attribute('href')}")
    assert response.ok, f"{lesson}: the student notebook link answers HTTP {response.status}"
    expected = json.loads((NOTEBOOKS / f"{lesson}.ipynb").read_text(encoding="utf-8"))
    assert response.json() == expected, (
        f"{lesson}: the downloadable notebook differs from notebooks/{lesson}.ipynb"
    )


TRANSLATED = [(lang, lesson) for lang, done in EDITIONS.items() for lesson in done]


@pytest.mark.parametrize("lang, lesson", TRANSLATED)
def test_translated_lesson_links_both_ways_and_serves_its_notebook(open_page, base_url, lang, lesson):
    """Does the English page link its translation and back, does the translated page show the
    translated text (its title) and serve notebooks/<lang>/<lesson>.ipynb byte for byte?"""
    page, _, _ = open_page(f"lessons/{lesson}")
    assert page.locator(f'article a[href="../{lang}/lessons/{lesson}.html"]').count() >= 1, (
        f"lessons/{lesson}: no link to its {lang} edition"
    )
    page, _, state = open_page(f"{lang}/lessons/{lesson}")
    assert page.locator(f'article a[href="../../lessons/{lesson}.html"]').count() >= 1, (
        f"{lang}/lessons/{lesson}: no link back to the English lesson"
    )
    nb = translations.translate(lesson_nb(lesson), lesson, lang)
    first = next(c.source for c in nb.cells if c.cell_type == "markdown")
    title = next(line[2:].strip() for line in first.splitlines() if line.startswith("# "))
    assert title.replace("`", "") in " ".join(state["text"].split()), (
        f"{lang}/lessons/{lesson}: the page does not show the translated title {title!r}"
    )
    link = page.locator(f'article a.download[href$="/{lesson}.ipynb"]')
    assert link.count() >= 1, f"{lang}/lessons/{lesson}: no download link to the student notebook"
    response = page.request.get(f"{base_url}/{lang}/lessons/{link.first.get_attribute('href')}")
    assert response.ok, f"{lang}/lessons/{lesson}: the notebook link answers HTTP {response.status}"
    got = response.json()
    expected = json.loads((NOTEBOOKS / lang / f"{lesson}.ipynb").read_text(encoding="utf-8"))
    assert got == expected, (
        f"{lang}/lessons/{lesson}: the download differs from notebooks/{lang}/{lesson}.ipynb"
    )
    assert got["metadata"].get("language") == lang, (
        f"{lang}/lessons/{lesson}: got language {got['metadata'].get('language')!r}, expected {lang!r}"
    )


@pytest.mark.parametrize("lang", list(EDITIONS))
def test_each_edition_has_a_home_page_linked_from_the_english_one(open_page, lang):
    """Does the English home page link the edition's home page, and does that list its lessons?"""
    page, _, _ = open_page("index")
    assert page.locator(f'article a[href="{lang}/index.html"]').count() >= 1, (
        f"index: no link to {lang}/index"
    )
    page, _, _ = open_page(f"{lang}/index")
    for lesson in EDITIONS[lang]:
        assert page.locator(f'article a[href="lessons/{lesson}.html"]').count() >= 1, (
            f"{lang}/index: no link to lessons/{lesson}.html"
        )
