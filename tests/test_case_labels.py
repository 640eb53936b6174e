"""Is every case label a student may see ("on input: <label>") Chinese in a Chinese notebook? A label
is data (shapes, dtypes, code) with words; the words come from byhand.po, never from the data."""

import byhand as checks
import pytest
from byhand import i18n

from autograder.course import lessons

LANG = "zh_CN"


def _labels(lesson):
    module = checks.for_lesson(lesson)
    for name, question in module.QUESTIONS.items():
        for hidden in (False, True):
            for case in question.cases(hidden):
                yield name, hidden, case.label


@pytest.mark.parametrize("lesson", lessons())
def test_every_case_label_is_translated(lesson):
    """Visible and hidden cases alike: no id the catalogue lacks, no English prose in a data field."""
    problems = []
    for name, hidden, label in _labels(lesson):
        shown = i18n.msg("on input: {label}", label=label)
        misses = i18n.untranslated(shown, LANG)
        if misses:
            problems.append(f"{name} ({'hidden' if hidden else 'visible'}): {label!r} keeps {misses}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lesson", lessons())
def test_a_label_keeps_its_data(lesson):
    """The Chinese label keeps every number of the English one (shapes, seeds, sizes)."""
    import re

    for name, _, label in _labels(lesson):
        zh = i18n.localize(label, LANG)
        for number in re.findall(r"\d+(?:\.\d+)?", label):
            assert number in zh, f"{name}: {number} lost from {zh!r} (English {label!r})"
