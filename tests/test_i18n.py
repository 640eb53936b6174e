"""Every check message has Chinese: each catalogued mistake, the blank (not done) case and a raising
answer go through the real checks with the language set to zh_CN, and every line of every message
must be translated by byhand's catalogue (student/byhand/messages_zh_CN.py)."""

from __future__ import annotations

import re

import byhand
import pytest
from byhand import _core, i18n

from autograder import course
from examples import answers_for, lessons_with_answers

LANG = "zh_CN"
ENGLISH_WORDS = re.compile(r"\b(?:the|is|should|not|your|got|expected|hint|input|raised|with|and)\b")


def mistake_messages():
    """(id, English message) of every catalogued mistake."""
    out = []
    for lesson in lessons_with_answers():
        for name, spec in answers_for(lesson).MISTAKES.items():
            ns = course.answer_namespace(lesson, spec["cells"])
            try:
                byhand.for_lesson(lesson).check(spec["question"], ns, hidden=True)
            except _core.CheckFailure as exc:
                out.append((f"{lesson}-{name}", str(exc)))
    return out


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
                    out.append((f"{lesson}-{qname}-{kind}", str(exc)))
    return out


@pytest.fixture(scope="module")
def messages():
    return mistake_messages() + frame_messages()


def test_every_check_message_line_has_chinese(messages):
    assert len(messages) > 50
    missing = {}
    for key, text in messages:
        for line in i18n.untranslated(text, LANG):
            missing.setdefault(line.strip(), key)
    assert not missing, "lines with no Chinese in messages_zh_CN.py:\n" + "\n".join(
        f"{k}  [{v}]" for k, v in sorted(missing.items())
    )


def test_localized_messages_keep_numbers_and_leave_no_english_sentence(messages):
    for key, text in messages:
        zh = i18n.localize(text, LANG)
        assert zh != text, key
        for en_line, zh_line in zip(text.split("\n"), zh.split("\n")):
            if "on input:" in en_line:  # the input's label is data (shapes, dtypes, code)
                continue
            assert not ENGLISH_WORDS.search(re.sub(r"`[^`]*`", "", zh_line)), (key, zh_line)
            for number in re.findall(r"\d+(?:\.\d+)?(?:e-?\d+)?", en_line):
                assert number in zh_line, (key, number, zh_line)


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
    assert str(zh.value) == i18n.localize(str(en.value), LANG) != str(en.value)
    assert i18n.language() == "en"
    with pytest.raises(ModuleNotFoundError):
        i18n.language("xx_XX")
