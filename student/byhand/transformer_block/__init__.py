"""Checks for lesson 06_transformer_block: positional encoding, the encoder block, the stack, the model.

The references are torch's own modules in float64, built in the judge's process with the weights
the case sent to the student's module: `nn.TransformerEncoderLayer` / `nn.TransformerEncoder`
(batch_first, dropout 0, norm_first both ways). The classic mistakes are recomputed by a small
functional model of the block (`ref_block`) with one thing changed, so a hint can say which one.
The graded names and their behaviour are documented in docs/api/06_transformer_block.md.
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import (
    EVAL_HINT,
    F64,
    encoder_state,
    layer_state,
    ref_block,
    ref_pe,
    ref_stack,
    ref_torch_encoder,
)
from ._shared import kind_of as kind_of
from ._shared import state_keys as state_keys
from .encoder import _encoder_cases, _encoder_judge
from .encoder_block import _block_cases, _block_judge, ref_torch_layer
from .positional_encoding import _pe_cases, _pe_judge
from .tiny_transformer import _model_cases, _model_judge, ref_model

LESSON = "06_transformer_block"
HELPERS = ("kind_of", "state_keys")  # run where the answer lives

QUESTIONS = _core.by_name(
    Question("positional_encoding", _pe_cases, _pe_judge),
    Question("EncoderBlock", _block_cases, _block_judge),
    Question("Encoder", _encoder_cases, _encoder_judge, needs=("EncoderBlock",)),
    Question(
        "TinyTransformer",
        _model_cases,
        _model_judge,
        needs=("Encoder", "EncoderBlock", "positional_encoding"),
    ),
)

check = _core.lesson_check(QUESTIONS, "EncoderBlock")
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls

__all__ = [
    "LESSON",
    "QUESTIONS",
    "check",
    "EVAL_HINT",
    "F64",
    "encoder_state",
    "layer_state",
    "ref_block",
    "ref_model",
    "ref_pe",
    "ref_stack",
    "ref_torch_encoder",
    "ref_torch_layer",
]
