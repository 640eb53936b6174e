"""One judgement, one language: the self-check (in the student's kernel) and the grade (the grader's
verdict, translated for grades.csv and the feedback page) say the same lines for every catalogued
mistake, hint and "also, on ..." lines included, in English and in Chinese; and the Chinese says no
English outside code (tests/zh_latin.py is the detector)."""

from __future__ import annotations

import html
import json
import re

import byhand
import pytest
from byhand import _core, i18n
from tiers import tiered
from zh_latin import code_prose as _prose_of
from zh_latin import latin_words, text_roots

from autograder import course
from autograder.judge import grade
from autograder.outcomes import Graded
from examples import answers_for, catalogue

LANGS = ("en", "zh_CN")
HINT_LINE = re.compile(r"^\s*(hint: |also, on |提示：|另外，输入为)")


def _both(lesson: str, mistake: str) -> dict:
    """{lang: (self-check text, self-check hint, grade text, grade hint)} for one catalogued mistake."""
    spec = answers_for(lesson).MISTAKES[mistake]
    ns = course.answer_namespace(lesson, spec["cells"])
    module = byhand.for_lesson(lesson)
    q = spec["question"]
    cases = grade._question_cases(lesson)[q]
    # what the sandboxed kernel sends back: each case's steps run on the answer, through JSON
    probe = [json.loads(json.dumps(_core.run_steps(c.steps, c.outputs, ns))) for c in cases]
    status, message, hint = grade.verdict(q, cases, probe, "", module)
    assert status != "passed", f"the grader passed the catalogued mistake {lesson}:{mistake}"
    out = {"status": status}
    for lang in LANGS:
        with i18n.using(lang), pytest.raises(_core.CheckFailure) as info:
            module.check(q, ns, hidden=True)
        out[lang] = (str(info.value), info.value.hint, grade.localized(message, lang), hint)
    return out


def _hint_lines(text: str) -> list:
    # numbers aside: a mistake with dropout draws other random values in each run
    return [
        re.sub(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", "#", line)
        for line in text.splitlines()
        if HINT_LINE.match(line)
    ]


# Every catalogued mistake (about 1.5 s a mistake: the answer runs three times): the cheapest of each
# lesson in `make test-fast`, the sample of each question in `make test` (the others of those are
# marked `breadth`), the rest in `make test-full` (marked `full`): tests/tiers.py.
@pytest.mark.parametrize(
    "lesson,mistake", tiered("MISTAKES", first_of="lesson", beyond_question=pytest.mark.full, hidden=True)
)
def test_self_check_and_grade_say_the_same_in_both_languages(lesson, mistake):
    both = _both(lesson, mistake)
    status = both.pop("status")
    for lang, (self_text, self_hint, grade_text, grade_hint) in both.items():
        assert len(self_text.splitlines()) == len(grade_text.splitlines()), (
            f"{lang}: the self-check says\n{self_text}\nthe grade says\n{grade_text}"
        )
        assert _hint_lines(self_text) == _hint_lines(grade_text), (
            f"{lang}: the hint lines differ:\n{self_text}\n---\n{grade_text}"
        )
        # the class report's name of the mistake is the English hint, whatever the language
        assert self_hint == both["en"][1], f"{lang}: the hint became {self_hint!r}"
        if status == "failed":
            assert grade_hint == (self_hint or catalogue.hint_of(both["en"][2])), (self_hint, grade_hint)
    en, zh = both["en"][0], both["zh_CN"][0]
    assert len(en.splitlines()) == len(zh.splitlines()), f"\n{en}\n---\n{zh}"
    assert latin_words(both["zh_CN"][0]) == [], f"English in the Chinese self-check:\n{zh}"
    assert latin_words(both["zh_CN"][2]) == [], f"English in the Chinese grade:\n{both['zh_CN'][2]}"


def test_a_missing_attribute_names_it_and_the_other_one_in_both_paths():
    """The lesson notes' own LayerNorm (self.gamma / self.beta): both paths, both languages, name
    self.weight on the first line's hint and self.bias on the next."""
    both = _both("02_layernorm", "LayerNorm_gamma_beta")
    both.pop("status")
    for lang, (self_text, _, grade_text, _) in both.items():
        for text in (self_text, grade_text):
            assert "self.weight" in text and "self.bias" in text, f"{lang}:\n{text}"
            assert len(_hint_lines(text)) == 2, f"{lang}:\n{text}"


def test_the_detector_finds_english_and_spares_code():
    assert latin_words("LayerNorm 的输出不正确，random values，x (2, 3) torch.float32") == [
        "random",
        "values",
    ]
    assert latin_words("请用 `x.var(unbiased=False)`，而不是 nn.Linear 或 self.w_q；eps=1e-05，GPT-2") == []
    assert latin_words("评估模式 (eval) 下 dropout 不起作用") == []
    assert latin_words("Self-checks are off") == ["Self-checks", "are", "off"]


# ---------------------------------------------------------------------------------------------
# what surrounds the lessons: the setup cell, the written answers, their rows and hand grades


def _zh_notebook(lesson: str):
    import nbformat

    return nbformat.read(course.NOTEBOOKS / "zh_CN" / f"{lesson}.ipynb", as_version=4)


@pytest.mark.parametrize("lesson", course.lessons())
def test_the_chinese_setup_cell_says_in_chinese_that_the_checks_are_off(lesson):
    """The lines a student reads when byhand is missing: Chinese, the install command as code."""
    from autograder.tooling import student

    setup = next(c.source for c in _zh_notebook(lesson).cells if student.is_setup(c))
    said = re.findall(r"print\(f'(.*)'\)", setup)
    assert len(said) == 2 and all(re.search(r"[\u4e00-\u9fff]", s) for s in said), said
    for s in said:
        assert latin_words(re.sub(r"\{\w+\}", "", s)) == [], s
    assert "Self-checks are off" not in setup and "self-checks are off" not in setup


@pytest.mark.parametrize("lesson", course.lessons())
def test_each_written_question_says_a_chinese_answer_is_welcome(lesson):
    from byhand import i18n

    from autograder.tooling.translations import WRITTEN_ANSWER_NOTE

    note = i18n.translations("zh_CN").gettext(WRITTEN_ANSWER_NOTE)
    assert note != WRITTEN_ANSWER_NOTE, "byhand.po has no Chinese of the written answer's note"
    cells = _zh_notebook(lesson).cells
    for i, cell in enumerate(cells):
        if cell.cell_type == "markdown" and course.nbgrader_meta(cell).get("solution"):
            assert cell.source.strip() == course.TEXT_STUB  # nbgrader's placeholder, which the note names
            assert note in cells[i - 1].source, cells[i - 1].source


@pytest.mark.parametrize("lesson", course.lessons())
def test_every_written_answer_has_a_chinese_model_answer_and_rubric_for_formgrader(lesson):
    from autograder.record.folders import with_rubrics as _with_rubrics
    from autograder.tooling import translations

    wanted = {course.nbgrader_meta(c)["grade_id"] for c in course.manual_cells(course.read_solution(lesson))}
    have = translations.rubrics(lesson, "zh_CN")
    assert set(have) == wanted, (
        f"translations/zh_CN/rubrics/{lesson}.md: current for {sorted(have)}, expected {sorted(wanted)}"
    )
    shown = "\n".join(
        c.source
        for c in _with_rubrics(_zh_notebook(lesson), lesson).cells
        if c.get("id", "").startswith("rubric-")
    )
    assert (
        shown.count("评分标准") == len(wanted) and "**Rubric" not in shown and "For the grader" not in shown
    )
    english = "\n".join(
        c.source
        for c in _with_rubrics(course.read_solution(lesson), lesson).cells
        if c.get("id", "").startswith("rubric-")
    )
    assert "评分标准" not in english and english.count("**Rubric") == len(wanted)


def test_written_answer_rows_and_hand_grades_speak_the_notebook_language():
    import nbformat

    from autograder.collect.submissions import Submission
    from autograder.record import gradebook

    lesson = "01_attention"
    nb = _zh_notebook(lesson)
    sub = Submission(student="ann", lesson=lesson, path=None)
    blank = grade.written_rows(sub, nb, "zh_CN")
    assert blank and all(r.status == "failed" and r.not_done for r in blank)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and course.nbgrader_meta(cell).get("solution"):
            cell.source = "分数的方差随 d_k 增长，softmax 会饱和。"
    answered = grade.written_rows(sub, nb, "zh_CN")
    assert all(r.status == "needs grading" for r in answered)
    english = grade.written_rows(sub, nb, "en")
    for zh, en in zip(blank + answered, grade.written_rows(sub, _zh_notebook(lesson), "en") + english):
        assert re.search(r"[\u4e00-\u9fff]", zh.message) and latin_words(zh.message) == [], zh.message
        ids = {str(m): m for m in (grade.NOT_ANSWERED, grade.NEEDS_GRADING)}  # the rows' catalogue ids
        assert zh.message == i18n.localize(ids[en.message], "zh_CN") != en.message
    # a hand grade from formgrader, added in the submission's language
    g = grade.Graded("ann", lesson, answered, notebook=nbformat.writes(nb))
    q = answered[0].question
    (done,) = gradebook.overlay([g], {("ann", lesson): {"scores": {q: (1.5, 0.0)}, "comments": {}}})
    row = next(r for r in done.rows if r.question == q)
    assert row.message == "人工评分：1.5 / 2 分", row.message
    (done,) = gradebook.overlay(
        [grade.Graded("ann", lesson, english)], {("ann", lesson): {"scores": {q: (2.0, 0.0)}, "comments": {}}}
    )
    assert next(r for r in done.rows if r.question == q).message == "graded by hand: 2 / 2 points"


def _class_of(lang: str) -> list:
    """Two students' graded 01_attention, as the grader leaves them: a mistake with its hint, two
    mistakes at once, a blank answer, a written answer waiting, all in `lang`."""
    lesson = "01_attention"
    graded = []
    hints = [
        ("scaled_dot_product_attention", "the scores are not scaled: divide q @ k^T by sqrt(d_k)"),
        ("causal_mask", "True above the diagonal means 'may attend to the future': use torch.tril, not triu"),
        ("split_heads", "not done"),
    ]
    for student in ("zh_CN-ann", "zh_CN-bo"):
        rows = [
            grade.Row(
                student,
                lesson,
                q,
                0,
                2,
                "failed",
                grade.localized(f"{q}: wrong\n  hint: {h}", lang),
                not_done=h == "not done",
            )
            for q, h in hints
        ]
        rows += grade.written_rows(
            __import__("autograder.collect.submissions", fromlist=["Submission"]).Submission(
                student=student, lesson=lesson, path=None
            ),
            _zh_notebook(lesson),
            lang,
        )
        graded.append(grade.Graded(student, lesson, rows, hints=hints, lang=lang))
    return graded


def _text_of(page: str) -> str:
    """What a reader sees of a page: no markup, no style, no links' targets."""
    page = re.sub(r"<style>.*?</style>|<title>|</title>|<meta[^>]*>", " ", page, flags=re.S)
    page = re.sub(r"<code>.*?</code>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "\n", page))


def test_the_class_report_of_a_chinese_class_is_chinese(tmp_path):
    from autograder.record.report import class_language, write_report

    zh = _class_of("zh_CN")
    assert class_language(zh) == "zh_CN" and class_language(zh + _class_of("en")) == "en"
    page = write_report(tmp_path / "zh", zh).read_text(encoding="utf-8")
    assert "<html lang='zh-CN'>" in page and "全班报告" in page and "最常见的错误" in page
    assert "注意力分数没有缩放" in page  # the hint, translated
    assert latin_words(_text_of(page)) == [], latin_words(_text_of(page))
    english = write_report(tmp_path / "en", _class_of("en")).read_text(encoding="utf-8")
    assert "<html lang='en'>" in english and "Class report" in english and "全班报告" not in english
    assert "the scores are not scaled" in english


# ---------------------------------------------------------------------------------------------
# the worked examples' and demos' code in Chinese: comments and printed text only


def _prose_nodes(tree) -> list:
    """The string constants a reader reads as text: docstrings, what print() is given, an assert's
    message and a plot's labels (f-strings: their text, not the expressions they format)."""
    import ast

    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Module))
            and ast.get_docstring(node) is not None
        ):
            found.append(node.body[0].value)
        for root in text_roots(node):
            found += [n for n in ast.walk(root) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return found


def _without_printed_text(source: str) -> str:
    """The code's syntax tree with the text of every print() call, assert message and docstring
    blanked (comments are not in it)."""
    import ast

    tree = ast.parse(source)
    for node in _prose_nodes(tree):
        node.value = ""
    for node in ast.walk(tree):  # an f-string's text may sit before or after its values
        if isinstance(node, ast.JoinedStr):
            node.values = [v for v in node.values if not (isinstance(v, ast.Constant) and v.value == "")]
    return ast.dump(tree)


@pytest.mark.parametrize("lesson", course.lessons())
def test_translated_code_cells_change_only_comments_and_printed_text(lesson):
    from autograder.tooling import translations

    code = translations.code_translations(lesson, "zh_CN")
    english = {translations.en_hash(c.source): c for c in translations.released_code_cells(lesson)}
    stale = sorted(set(code) - set(english))
    assert not stale, f"translations/zh_CN/code/{lesson}.md: entries whose English cell changed: {stale}"
    for h, text in code.items():
        en = english[h]
        assert _without_printed_text(text) == _without_printed_text(en.source), (
            f"{en['id']}: the translation changes the code, not only comments and printed text"
        )
        if course.nbgrader_meta(en):  # a graded cell: line for line, so the grader pairs its lines
            assert len(text.split("\n")) == len(en.source.split("\n")), (
                f"{en['id']}: a graded cell's translation keeps its lines (got {len(text.split(chr(10)))} lines)"
            )
        assert re.search(r"[\u4e00-\u9fff]", text), f"{en['id']}: nothing translated"
    student_nb = _zh_notebook(lesson)
    ids = {en["id"] for en in english.values() if translations.en_hash(en.source) in code}
    for cell in student_nb.cells:
        if cell.get("id") in ids:
            assert (
                cell.source
                == code[
                    translations.en_hash(next(c.source for c in english.values() if c["id"] == cell["id"]))
                ]
            )


def test_the_code_comparison_can_fail():
    assert _without_printed_text('print("a")  # x') == _without_printed_text('print("乙")  # 注释')
    assert _without_printed_text('print(f"{a:.2f} ok")') == _without_printed_text('print(f"{a:.2f} 好")')
    assert _without_printed_text('assert x, "x is wrong"') == _without_printed_text('assert x, "x 不对"')
    assert _without_printed_text('x = "a"') != _without_printed_text('x = "乙"')
    assert _without_printed_text('print(f"{a:.2f}")') != _without_printed_text('print(f"{b:.2f}")')
    assert _without_printed_text('assert x == "a", "m"') != _without_printed_text('assert x == "乙", "m"')


@pytest.mark.parametrize("lesson", course.lessons())
def test_chinese_code_cells_say_no_english(lesson):
    """Do the Chinese notebook's worked examples and demos comment and print in Chinese: no English
    word (tests/zh_latin.py) in a comment, a docstring, a printed string or an assert's message?
    A plot's title, axis labels and legend are text too; code and identifiers are code."""
    from autograder.tooling import student

    english = []
    for cell in _zh_notebook(lesson).cells:
        if cell.cell_type != "code" or course.nbgrader_meta(cell) or student.is_setup(cell):
            continue
        words = latin_words(_prose_of(cell.source))
        if words:
            english.append(f"{cell['id']}: {sorted(set(words))}")
    assert not english, (
        f"got English in the comments or printed text of notebooks/zh_CN/{lesson}.ipynb, expected Chinese "
        f"(translations/zh_CN/code/{lesson}.md):\n" + "\n".join(english)
    )


def test_the_code_prose_detector_reads_comments_and_prints_only():
    source = 'x = "plain words"  # a comment here (seeds, T)\nprint(f"seed {s}: done", x)\nassert x, "wrong answer"\n'
    assert sorted(latin_words(_prose_of(source))) == ["answer", "comment", "done", "here", "seed", "wrong"]
    assert latin_words(_prose_of("x = 1  # (seeds, len(n_list)) per seed")) == ["per", "seed"]
    assert latin_words(_prose_of('ax.set_title("Loss curve")  # (B, T, d)\nprint("损失", loss)')) == [
        "Loss",
        "curve",
    ]
    assert (
        latin_words(_prose_of('ax.plot(x, label=f"{name}：峰值")  # (B, T, d)\nax.set_xlabel("损失")')) == []
    )
    assert latin_words(
        _prose_of("print(f\"{init_std('kaiming', 3, 4)} {d['xavier']} {'是' if a else 'no'}\")")
    ) == ["no"]
    # a plot's text may come from a literal the loop walks
    looped = (
        'for ax, t in [(a, "BatchNorm: one feature"), (b, "层归一化")]:\n    ax.set_title(t, fontsize=9)\n'
    )
    assert latin_words(_prose_of(looped)) == ["one", "feature"]
    assert _without_printed_text(looped) == _without_printed_text(looped.replace("one feature", "一个特征"))
    assert _without_printed_text(looped) != _without_printed_text(looped.replace("(b,", "(c,"))
    as_code = 'for p in ["hybrid"]:\n    ax.plot(run(p), label=p)\n'
    assert latin_words(_prose_of(as_code)) == []
    assert _without_printed_text(as_code) != _without_printed_text(as_code.replace("hybrid", "混合式"))


@pytest.mark.parametrize(
    "note",
    [
        i18n.msg("a cell claimed grading metadata the lesson does not have: ignored"),
        i18n.msg("a duplicate of the locked cell '{cell}' was removed", cell="causal_mask_test"),
        i18n.msg("the locked cell '{cell}' was changed: the original was restored", cell="causal_mask_test"),
        i18n.msg("the cell '{cell}' was missing: it was put back", cell="causal_mask_test"),
        i18n.msg(
            "the kernel died in cell {cell} ({why}); that cell was skipped and the notebook run again",
            cell=12,
            why=i18n.N_("the kernel died"),  # as runner.py builds it (probe.death_reason)
        ),
        i18n.msg(
            "cell {cells} ran out of memory and kept it, and the kernel died when the grader called your "
            "functions; that cell was skipped and the notebook run again",
            cells="7",
        ),
        i18n.msg("the test cell timed out after {s} s", s=60),  # built from its id, as grade.py builds it
    ],
)
def test_the_graders_notes_speak_chinese(note):
    """What the grader did to a notebook (restored cells, a dead kernel), as a Chinese student reads it,
    built from the catalogue ids grade.py and restore.py build it from."""
    zh = grade.localized_note(note, "zh_CN")
    assert zh != note and re.search(r"[\u4e00-\u9fff]", zh) and latin_words(zh) == [], zh


def test_a_forged_language_is_english_and_a_known_one_is_kept():
    import nbformat

    for forged in ("xx_XX", "../../etc", "zh_CN; rm", 3, None, ""):
        nb = nbformat.v4.new_notebook(metadata={"language": forged})
        assert grade.language(nb) == "en", forged
        assert grade.localized("the test cell timed out after 60 s", grade.language(nb)).startswith(
            "the test"
        )
    assert grade.language(nbformat.v4.new_notebook(metadata={"language": "zh_CN"})) == "zh_CN"
    saved = nbformat.writes(nbformat.v4.new_notebook(metadata={"language": "zh_CN"}))
    assert Graded("s", "01_attention", [], notebook=saved).language == "zh_CN"
    forged = nbformat.writes(nbformat.v4.new_notebook(metadata={"language": "../../etc"}))
    assert Graded("s", "01_attention", [], notebook=forged).language == "en"


@pytest.mark.parametrize("failure", [_core.CheckFailure, _core.NotDone, _core.AnswerError])
def test_a_failed_self_check_in_chinese_shows_no_english_exception_name(failure):
    """The short traceback a notebook shows starts with the failure's name: the English class name
    in English (as before), the catalogue's words in Chinese."""
    exc = failure("x 的形状不对")
    before = i18n.language()
    try:
        i18n.language("en")
        assert exc._short_traceback()[0] == f"{_core._RED}{failure.__name__}{_core._RESET}: x 的形状不对"
        i18n.language("zh_CN")
        head = exc._short_traceback()[0]
    finally:
        i18n.language(before)
    name = head.split(_core._RESET)[0].removeprefix(_core._RED)
    assert not re.search(r"[A-Za-z]", name), f"got {name!r} before a Chinese failure, expected Chinese words"
    assert head.endswith(f"{_core._RESET}：x 的形状不对"), head
