"""Checks for lesson 02_layernorm: LayerNorm, RMSNorm and BatchNorm, by hand.

Each graded name has cases (small first; hidden ones add seeds, dtypes and shapes) and a judge that
compares with torch's own op (`F.layer_norm`, `F.rms_norm`, `F.batch_norm`, in float64) and, on a
mismatch, recognises the classic mistakes of docs/mistakes.md by recomputing them.

The inputs are built to separate the mistakes: small d (4..8) so the unbiased variance is off by
sqrt(d/(d-1)), a large eps (0.1) with small-variance rows so "eps outside the sqrt" shows, non-zero
means so "mean subtracted" shows in RMSNorm, B != L != d so a wrong dim shows, random affine
parameters so a missing or misplaced affine shows, and a small batch N for BatchNorm.
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import ref_layer_norm, ref_rms_norm
from .batch_norm import _bn_cases, _bn_judge, ref_batch_norm
from .layer_norm import _ln_cases, _ln_judge
from .layer_norm_module import _lnm_cases, _lnm_judge
from .rms_norm import _rms_cases, _rms_judge
from .rms_norm_module import _rmsm_cases, _rmsm_judge

LESSON = "02_layernorm"

QUESTIONS = _core.by_name(
    Question("layer_norm", _ln_cases, _ln_judge),
    Question("LayerNorm", _lnm_cases, _lnm_judge),
    Question("rms_norm", _rms_cases, _rms_judge),
    Question("RMSNorm", _rmsm_cases, _rmsm_judge),
    Question("batch_norm", _bn_cases, _bn_judge),
)

check = _core.lesson_check(QUESTIONS, "layer_norm")
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls

__all__ = ["LESSON", "QUESTIONS", "check", "ref_batch_norm", "ref_layer_norm", "ref_rms_norm"]
