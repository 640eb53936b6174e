"""Checks for lesson 03_residual: the position-wise feed-forward network and the sublayer connection.

Each graded name has cases (small first; hidden ones add seeds, dtypes and shapes) and a judge that
compares with a float64 reference built from torch's own ops on the same weights (`F.linear`,
`F.relu`, `F.layer_norm`) and, on a mismatch, recognises the classic mistakes of docs/mistakes.md
by recomputing them. The modules are built in the student's kernel with weights the judge chose
(`new(..., state=...)`); the sublayer handed to `SublayerConnection` is a torch module built the same
way. "Zero the sublayer" (zero weight and bias) separates the placements: Pre-LN is then the
identity and Post-LN is LN(x). Dropout is checked without relying on random numbers: in eval mode
it must do nothing, in training mode with p=1 it must drop everything it wraps.
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import ref_sublayer_connection
from .hybrid_sublayer_connection import _hyb_cases, _hyb_judge
from .positionwise_feed_forward import FFN_OUTPUT, _ffn_cases, _ffn_judge, ref_ffn
from .sublayer_connection import _sub_cases, _sub_judge

LESSON = "03_residual"

QUESTIONS = _core.by_name(
    Question("PositionwiseFeedForward", _ffn_cases, _ffn_judge),
    Question("SublayerConnection", _sub_cases, _sub_judge),
    Question("HybridSublayerConnection", _hyb_cases, _hyb_judge),
)

check = _core.lesson_check(QUESTIONS, "SublayerConnection")
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls

__all__ = ["LESSON", "QUESTIONS", "check", "FFN_OUTPUT", "ref_ffn", "ref_sublayer_connection"]
