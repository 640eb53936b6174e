"""Does a feedback page lay out in Chinese as in English? A failing submission's page rendered in
Chromium (with a CJK font from Debian, `.ci/install-browser.sh`): the points ("0 / 3") and the
status ("未通过") stay on one line each, every column at least as wide as its text, and the Han
characters drawn by a Chinese font of the page's font stack. Screenshots of both languages go to
the test's temporary folder."""

from __future__ import annotations

import functools

import byhand
import nbformat
import pytest
from byhand import i18n
from byhand._core import CheckFailure

from autograder import course
from autograder.collect.submissions import Submission
from autograder.outcomes import Row, Status
from autograder.record import feedback
from examples import answers_for

pytest_plugins = ["conftest_browser"]

LESSON = "03_residual"
CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei")

# For each cell of the questions table: how many lines its text takes, and how wide it is against
# its text (a column narrower than its content wraps it, one character a line in CJK)
MEASURE = """() => [...document.querySelectorAll('table.questions tr')].slice(1).map(tr =>
  [...tr.cells].slice(0, 3).map(td => {
    const range = document.createRange();
    range.selectNodeContents(td);
    const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
    const style = getComputedStyle(td);
    const inner = td.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return {text: td.innerText, lines: tops.size, inner: inner, text_width: range.getBoundingClientRect().width};
  }))"""


@functools.cache
def _failure(lang: str) -> str:
    """A catalogued mistake's real message, in `lang`."""
    spec = next(iter(answers_for(LESSON).MISTAKES.values()))
    ns = course.answer_namespace(LESSON, spec["cells"])
    with i18n.using(lang), pytest.raises(CheckFailure) as info:
        byhand.for_lesson(LESSON).check(spec["question"], ns, hidden=True)
    return str(info.value)


def _page(lang: str, tmp_path) -> str:
    student = "王芳" if lang == "zh_CN" else "Alice Smith"
    rows = [
        Row(student, LESSON, "PositionwiseFeedForward", 0, 3, Status.FAILED, _failure(lang)),
        Row(student, LESSON, "SublayerConnection", 2, 2, Status.PASSED),
        Row(
            student,
            LESSON,
            "HybridSublayerConnection",
            0,
            1,
            Status.ERROR,
            "the test cell timed out after 30 s",
        ),
    ]
    released = course.ROOT / "notebooks" / lang / f"{LESSON}.ipynb"
    nb = nbformat.read(released if released.exists() else course.SOLUTIONS / f"{LESSON}.ipynb", as_version=4)
    html = feedback.render(Submission(student, LESSON, None), nb, rows, [], lang=lang)
    path = tmp_path / lang / "feedback.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path.as_uri()


def _fonts_of(page, selector: str) -> list:
    """The fonts Chromium drew the text of `selector` with (DevTools' CSS.getPlatformFontsForNode)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    return [f["familyName"] for f in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]]


@pytest.mark.gate  # cheap (one page per case), and the only check of the layout in a CJK script
@pytest.mark.parametrize("lang", ["zh_CN", "en"])
@pytest.mark.parametrize("width", [1000, 560])
def test_points_and_status_stay_on_one_line(chromium, tmp_path, lang, width):
    page = chromium.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(_page(lang, tmp_path))
        cells = page.evaluate(MEASURE)
        page.screenshot(path=str(tmp_path / f"feedback-{lang}-{width}.png"), full_page=False)
        assert [row[1]["text"] for row in cells][:1] == ["0 / 3"], f"got {cells}"
        for row in cells:
            for cell in row:
                assert cell["lines"] == 1, f"{cell['text']!r} takes {cell['lines']} lines, expected 1: {row}"
                assert cell["inner"] + 0.5 >= cell["text_width"], (
                    f"{cell['text']!r}: its column is {cell['inner']:.1f} px wide, its text "
                    f"{cell['text_width']:.1f} px"
                )
        if lang == "zh_CN":
            title = page.title()
            assert "王芳的反馈" in title, f"got the title {title!r}, expected no space before 的"
            fonts = _fonts_of(page, "table.questions tr.failed td:nth-child(3)")
            assert any(f in CJK_FONTS for f in fonts), (
                f"got the status drawn in {fonts}, expected one of {CJK_FONTS} (fonts-noto-cjk: "
                "bash .ci/install-browser.sh)"
            )
    finally:
        page.close()


# Every cell of the class report's tables that holds a number, a score or a header: its lines
MEASURE_REPORT = """() => [...document.querySelectorAll('th, td.num, td:first-child')].map(td => {
    const range = document.createRange();
    range.selectNodeContents(td);
    const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
    return {text: td.innerText, lines: tops.size};
  })"""


@pytest.mark.parametrize("lang", ["zh_CN", "en"])
def test_the_class_report_keeps_scores_and_headers_on_one_line(chromium, tmp_path, lang):
    from autograder.course import lesson_max
    from autograder.outcomes import Graded
    from autograder.record.report import write_report

    message = _failure(lang)
    hint = CheckFailure(_failure("en")).hint  # the report keeps the English hint and translates it
    graded = []
    for student in ("王芳", "李雷", "Alice Smith"):
        rows = [
            Row(student, LESSON, "PositionwiseFeedForward", 0, 3, Status.FAILED, message),
            Row(student, LESSON, "SublayerConnection", 2, 2, Status.PASSED),
            Row(student, LESSON, "HybridSublayerConnection", 1, 1, Status.PASSED),
        ]
        graded.append(Graded(student, LESSON, rows, hints=[("PositionwiseFeedForward", hint)], lang=lang))
    page = chromium.new_page(viewport={"width": 560, "height": 900})
    try:
        page.goto(write_report(tmp_path / "out", graded).as_uri())
        cells = page.evaluate(MEASURE_REPORT)
        page.screenshot(path=str(tmp_path / f"report-{lang}.png"), full_page=True)
    finally:
        page.close()
    # the report counts every question of the lesson, the written ones too (3 of 6 auto-graded here)
    score = f"3 / {lesson_max(LESSON, 6):g}"
    assert any(c["text"] == score for c in cells), f"no cell reads {score!r}: {cells}"
    wrapped = [c for c in cells if c["lines"] != 1]
    assert not wrapped, f"cells on more than one line: {wrapped}"
