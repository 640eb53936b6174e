"""Checks for lesson 05_init: `init_std` and `init_linear_`.

`init_std` is a formula: compared with Xavier's sqrt(2 / (fan_in + fan_out)) and Kaiming's
sqrt(2 / fan_in) on non-square fans. `init_linear_` is random: the grader seeds the kernel, builds
a non-square `nn.Linear` there, lets the student's function fill it, and judges the statistics of
the weights that come back (std within 3% of the target on >= 36,000 weights, where the
std-of-std is about 0.4%; mean near 0; kurtosis of a normal, not a uniform), the bias (zero) and
the return value (the layer). A wrong std is matched against the classic mistakes: fan_out for
fan_in (or `weight.shape[0]`, which is out_features), no ReLU gain, the variance passed as the std.
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import ref_init_std
from .init_linear_ import KURTOSIS_ATOL, STD_RTOL, _lin_cases, _lin_judge
from .init_std import _std_cases, _std_judge

LESSON = "05_init"

QUESTIONS = _core.by_name(
    Question("init_std", _std_cases, _std_judge),
    Question("init_linear_", _lin_cases, _lin_judge, needs=("init_std",)),
)

check = _core.lesson_check(QUESTIONS, "init_std")
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls

__all__ = ["LESSON", "QUESTIONS", "check", "KURTOSIS_ATOL", "STD_RTOL", "ref_init_std"]
