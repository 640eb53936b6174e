"""Checks for lesson 10_flash_attention: attention that never holds the L x L matrix.

The numbers are judged as everywhere else: the grader's float64 references (lesson 01's attention,
`torch.logsumexp` of the scaled scores, autograd through that attention) on inputs it generated, and
on a mismatch the classic mistakes of the online softmax recomputed on the same inputs with the
same block sizes ("the running max is not used to rescale the accumulated output").

What the answer *does* is observed where the answer runs. The graded call goes through a helper,
`observe`, that runs it under a `TorchDispatchMode` (every aten op's output: the size of its
storage, its shape, dtype and the op that made it), which also counts the matmul FLOPs the way
`torch.utils.flop_counter.FlopCounterMode` does (2 per multiply-add: one observer, one pass;
tests/test_flash_observer.py checks that the two counts agree). Only plain numbers come back: the output tensors, the largest new storage (elements, shape, dtype, op), the matmul
FLOPs. The judge then decides from those numbers
with its own budgets: no tensor above `max(block_q * block_k, (L + block) * d)` elements per
batch-and-head, at least the matmul FLOPs the output needs (so the work was seen at all), and with
`is_causal` well under the dense count.

What this cannot prove: the facts are counted in the student's kernel, so code that works around
the observer (computes in numpy and pads with dummy torch matmuls, pops the dispatch mode, or
patches this package inside its kernel) can report small numbers. It cannot fake the outputs, which
the judge compares with its own references; the memory and FLOP verdicts are honest for answers
written with torch ops, which is what the lesson asks for.

A module per exercise, named by it (`flash_attention_forward.py`, `causal_skipping.py`,
`flash_attention_backward.py`, `flash_attention.py` for the autograd.Function `FlashAttention`): its
cases, its mistakes and its judge; what several share (the observer, the reference attention, the
memory and FLOP budgets and their judges, the inputs and labels) is in `_shared.py`.
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import (
    SIGNATURES,
    SKIP_LIMIT,
    budget,
    causal_mask,
    judge_default_blocks,
    judge_flops_seen,
    judge_memory,
    observe,
    ref_forward,
)
from .causal_skipping import _skip_cases, _skip_judge
from .flash_attention import _fn_cases, _fn_judge, run_function
from .flash_attention_backward import _bwd_cases, _bwd_judge, blocked_backward, ref_backward
from .flash_attention_forward import MAX_FROM_ZERO, NO_MAX, _fwd_cases, _fwd_judge, blocked_forward

LESSON = "10_flash_attention"
HELPERS = ("observe", "run_function")


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("flash_attention_forward", _fwd_cases, _fwd_judge),
    Question("causal_skipping", _skip_cases, _skip_judge, needs=("flash_attention_forward",)),
    Question("flash_attention_backward", _bwd_cases, _bwd_judge),
    Question(
        "FlashAttention",
        _fn_cases,
        _fn_judge,
        needs=("flash_attention_forward", "flash_attention_backward"),
    ),
)

check = _core.lesson_check(QUESTIONS, "flash_attention_forward", devices=False)
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls

__all__ = [
    "LESSON",
    "HELPERS",
    "QUESTIONS",
    "check",
    "MAX_FROM_ZERO",
    "NO_MAX",
    "SIGNATURES",
    "SKIP_LIMIT",
    "blocked_backward",
    "blocked_forward",
    "budget",
    "causal_mask",
    "judge_default_blocks",
    "judge_flops_seen",
    "judge_memory",
    "observe",
    "ref_backward",
    "ref_forward",
    "run_function",
]
