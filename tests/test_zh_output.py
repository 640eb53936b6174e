"""One judgement, one language: the self-check (in the student's kernel) and the grade (the grader's
verdict, translated for grades.csv and the feedback page) say the same lines for every catalogued
mistake, hint and "also, on ..." lines included, in English and in Chinese; and the Chinese says no
English outside code (tests/zh_latin.py is the detector)."""

from __future__ import annotations

import json
import re

import byhand
import pytest
from byhand import _core, i18n
from zh_latin import latin_words

from autograder import course
from autograder.judge import grade
from examples import answers_for, catalogue, catalogued

LANGS = ("en", "zh_CN")
HINT_LINE = re.compile(r"^\s*(hint: |also, on |提示：|另外，在输入)")


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


def _gate_and_full():
    """Every catalogued mistake; in `make test` the first of each question (about 1.5 s a mistake:
    the answer runs three times), the rest in `make test-full`."""
    seen, params = set(), []
    for lesson, mistake in catalogued("MISTAKES"):
        question = (lesson, answers_for(lesson).MISTAKES[mistake]["question"])
        marks = () if question not in seen else (pytest.mark.full,)
        seen.add(question)
        params.append(pytest.param(lesson, mistake, marks=marks, id=f"{lesson}-{mistake}"))
    return params


@pytest.mark.parametrize("lesson,mistake", _gate_and_full())
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
