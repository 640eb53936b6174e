"""Checks for lesson 04_pre_post_ln: a residual stack with Pre-LN or Post-LN, and its per-block
gradient norms.

The grader picks every weight (a random state dict with non-trivial LayerNorm affines), builds the
student's `ResidualStack` with it in the kernel, and recomputes the expected numbers here with a
float64 reference of the same stack. A mismatch is matched against the classic wrong wirings
(Pre-LN and Post-LN swapped, residual missing, head missing) and the classic wrong tensors for
`block_grad_norms` (bias grads, reversed order, LayerNorm grads, squared norms, a sum loss).
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import random_state, ref_block_grad_norms, ref_forward, ref_grads
from .block_grad_norms import _grad_cases, _grad_judge
from .residual_stack import STACK_OUTPUT, _stack_cases, _stack_judge, y_double

LESSON = "04_pre_post_ln"

QUESTIONS = _core.by_name(
    Question("ResidualStack", _stack_cases, _stack_judge),
    Question("block_grad_norms", _grad_cases, _grad_judge, needs=("ResidualStack",)),
)

check = _core.lesson_check(QUESTIONS, "ResidualStack")
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls

__all__ = [
    "LESSON",
    "QUESTIONS",
    "check",
    "STACK_OUTPUT",
    "random_state",
    "ref_block_grad_norms",
    "ref_forward",
    "ref_grads",
    "y_double",
]
