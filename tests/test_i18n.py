"""Every check message has Chinese: the blank (not done) case and a raising answer of every
question go through the real judge with the language set to zh_CN, and every line of every message
must come from byhand's gettext catalogue (student/byhand/locale/zh_CN/LC_MESSAGES/byhand.po). Each catalogued
mistake's message gets the same checks in tests/test_lessons.py, where its check already runs."""

from __future__ import annotations

import byhand
import pytest
from byhand import _core, i18n
from zh_messages import LANG, localization_problems, untranslated

from autograder import course
from examples import answers_for, lessons_with_answers


def frame_messages():
    """The blank (not done) and raising answers of every question, through the real judge."""
    out = []
    for lesson in byhand.LESSONS:
        module = byhand.for_lesson(lesson)
        for qname, q in module.QUESTIONS.items():
            case = _core.ordered_cases(q, hidden=False)[0]
            for kind, result in (
                ("blank", {"error": "NotImplementedError", "not_implemented": True, "step": 0}),
                (
                    "raises",
                    {"error": "ZeroDivisionError: division by zero (line 3)", "not_implemented": False},
                ),
            ):
                try:
                    _core.judge_result(q, case, result)
                except _core.CheckFailure as exc:
                    out.append((f"{lesson}-{qname}-{kind}", i18n.message_of(exc)))
    return out


@pytest.fixture(scope="module")
def messages():
    return frame_messages()


def test_every_check_message_line_has_chinese(messages):
    assert len(messages) > 50
    missing = {}
    for key, text in messages:
        for line in untranslated(text):
            missing.setdefault(line, key)
    assert not missing, "lines with no Chinese in byhand.po:\n" + "\n".join(
        f"{k}  [{v}]" for k, v in sorted(missing.items())
    )


def test_localized_messages_keep_numbers_and_leave_no_english_sentence(messages):
    problems = {key: localization_problems(text) for key, text in messages}
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, f"got {problems}, expected none"


def test_the_checks_speak_the_language_that_is_set():
    lesson, spec = next(
        (lesson, spec) for lesson in lessons_with_answers() for spec in answers_for(lesson).MISTAKES.values()
    )
    ns = course.answer_namespace(lesson, spec["cells"])
    module = byhand.for_lesson(lesson)
    with pytest.raises(_core.CheckFailure) as en:
        module.check(spec["question"], ns)
    with i18n.using(LANG), pytest.raises(_core.CheckFailure) as zh:
        module.check(spec["question"], ns)
    assert str(zh.value) == i18n.localize(i18n.message_of(en.value), LANG) != str(en.value)
    assert i18n.language() == "en"
    with pytest.raises(ModuleNotFoundError):
        i18n.language("xx_XX")


@pytest.mark.parametrize(
    ("student", "title"),
    [
        ("王芳", "01_attention：王芳的反馈"),  # CJK beside CJK: no space
        ("Alice", "01_attention：Alice 的反馈"),  # a Latin name: one half-width space before 的
        ("bob_02", "01_attention：bob_02 的反馈"),  # a digit at the edge too
        ("Émile", "01_attention：Émile 的反馈"),
    ],
)
def test_a_page_puts_a_space_between_a_latin_value_and_chinese_text(student, title):
    """The feedback page's title is 「{student}的反馈」 in the catalogue; the space the Chinese
    typography asks for beside a Latin name depends on the name, so the renderer adds it."""
    got = i18n.page("{lesson}: feedback for {student}", LANG, lesson="01_attention", student=student)
    assert got == title, f"got {got!r}, expected {title!r}"
    # the English template has no CJK character: formatted as it is
    assert i18n.page("{lesson}: feedback for {student}", "en", lesson="01_attention", student=student) == (
        f"01_attention: feedback for {student}"
    )


def test_the_page_spacing_keeps_format_specs_and_spares_punctuation():
    assert i18n._format_spaced("{n:>3}分", {"n": 7}) == "  7 分"  # the value as its spec pads it
    assert i18n._format_spaced("共{n}分", {"n": 7}) == "共 7 分"
    assert i18n._format_spaced("{a}：{b}。", {"a": "x", "b": "y"}) == "x：y。"  # full-width punctuation: none
    assert i18n._format_spaced("{a}的{b}", {"a": "", "b": "值"}) == "的值"  # an empty value adds nothing
