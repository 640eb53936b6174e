"""Checks for lesson 01_attention: attention, masks, heads.

Each graded name has cases (small first; hidden ones add seeds, dtypes and shapes) and a judge that
compares with torch's own ops and, on a mismatch, recognises the classic mistakes of
docs/mistakes.md by recomputing them ("your output equals softmax over the queries ...").
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import ref_causal_mask, ref_merge_heads, ref_sdpa, ref_split_heads, ref_weights
from .causal_mask import _causal_cases, _causal_judge
from .merge_heads import _merge_cases, _merge_judge
from .multi_head_attention import MHA_OUTPUT, _mha_cases, _mha_judge, ref_mha
from .padding_mask import _padding_cases, _padding_judge
from .scaled_dot_product_attention import _sdpa_cases, _sdpa_judge
from .split_heads import _split_cases, _split_judge

LESSON = "01_attention"

QUESTIONS = _core.by_name(
    Question("scaled_dot_product_attention", _sdpa_cases, _sdpa_judge),
    Question("causal_mask", _causal_cases, _causal_judge),
    Question("padding_mask", _padding_cases, _padding_judge),
    Question("split_heads", _split_cases, _split_judge),
    Question("merge_heads", _merge_cases, _merge_judge),
    Question(
        "MultiHeadAttention",
        _mha_cases,
        _mha_judge,
        needs=("scaled_dot_product_attention", "split_heads", "merge_heads"),
    ),
)

check = _core.lesson_check(QUESTIONS, "causal_mask")
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls

__all__ = [
    "LESSON",
    "QUESTIONS",
    "check",
    "MHA_OUTPUT",
    "ref_causal_mask",
    "ref_merge_heads",
    "ref_mha",
    "ref_sdpa",
    "ref_split_heads",
    "ref_weights",
]
