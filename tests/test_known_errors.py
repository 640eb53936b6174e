"""Are the PyTorch errors students' code raises most often explained in one line, in English and in
Chinese, with the error itself kept below? Each error here is raised by real PyTorch (the installed
version's own words), then goes through the judge as an answer's error does."""

from __future__ import annotations

import pytest
import torch
from byhand import _core, attention, i18n
from zh_messages import localization_problems, untranslated


class _TwoGradients(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        return x * w

    @staticmethod
    def backward(ctx, dy):
        return (dy,)  # one gradient for two inputs


def _in_place_on_saved():
    x = torch.ones(3, requires_grad=True)
    y = x.sigmoid()
    y += 1  # sigmoid saved its output for backward
    y.sum().backward()


def _in_place_on_leaf():
    w = torch.ones(3, requires_grad=True)
    w += 1


ERRORS = {
    "expand sizes": lambda: torch.ones(2, 3).expand(2, 4),
    "expand dims": lambda: torch.ones(2, 3, 4).expand(3, 4),
    "view size": lambda: torch.ones(2, 3).view(4, 2),
    "view stride": lambda: torch.ones(2, 3, 4).transpose(1, 2).view(2, 12),
    "matmul": lambda: torch.ones(2, 3) @ torch.ones(4, 5),
    "bmm": lambda: torch.ones(2, 3, 4) @ torch.ones(2, 5, 6),
    "broadcast": lambda: torch.ones(2, 3) + torch.ones(2, 4),
    "gradients": lambda: (
        _TwoGradients.apply(torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True))
        .sum()
        .backward()
    ),
    "leaf in place": _in_place_on_leaf,
    "saved in place": _in_place_on_saved,
}


@pytest.mark.parametrize("name", ERRORS)
def test_a_known_error_is_explained_in_both_languages(name):
    with pytest.raises(Exception) as info:
        ERRORS[name]()
    error = f"{type(info.value).__name__}: {info.value}"
    assert _core.explain_error(error), f"no explanation for {error!r}"
    question = attention.QUESTIONS["scaled_dot_product_attention"]
    case = _core.ordered_cases(question, hidden=False)[0]
    result = {"error": error, "at": {"cell": "Cell In[7]", "line": 4, "code": "h = q @ k"}}
    with pytest.raises(_core.AnswerError) as failure:
        _core.judge_result(question, case, result)
    text = i18n.message_of(failure.value)  # the Msg the check built (str() flattens it)
    assert text.splitlines()[0].startswith("scaled_dot_product_attention raised an error: ")
    assert f"  the error: {error.splitlines()[0]}" in text, f"the error itself is kept below:\n{text}"
    assert "  in your code: Cell In[7], line 4: h = q @ k" in text
    assert untranslated(text) == [], "lines with no Chinese in byhand.po"
    assert localization_problems(text) == [], "its Chinese message"


def test_an_unknown_error_is_shown_as_raised():
    error = "ValueError: something only this answer says"
    assert _core.explain_error(error) == ""
    message = _core.answer_error_message("f", {"error": error, "at": "forged"}, "x (2,)")
    assert message == f"f raised {error}\n  on input: x (2,)", "a malformed `at` is left out"
