"""Checks for lesson 09_modern_block: the block inside Llama-style models (RoPE, SwiGLU, grouped-query
attention, the pre-RMSNorm block).

The references are float64 functions in this package, run in the judge's process with the inputs and
weights the case sent to the student's code. The classic mistakes are recomputed by the same
references with one thing changed (the half-split layout, the exponent i/d instead of 2i/d, positions
that ignore the cache, values rotated, RoPE before the head split, key/value heads tiled instead of
repeated, a Post-norm or parallel block, ...), so a hint names the one the answer equals. The graded
names and their behaviour are documented in docs/api/09_modern_block.md.

A module per exercise, named by it (`apply_rope.py`, `swiglu.py`, `repeat_kv.py`,
`grouped_query_attention.py`, `llama_block.py`): its cases, its mistakes and its judge; what several
share (the references of RoPE, SwiGLU and grouped-query attention) is in `_shared.py`.
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import CACHED as CACHED
from ._shared import F64 as F64
from ._shared import PER_SEQUENCE as PER_SEQUENCE
from ._shared import gqa_state as gqa_state
from ._shared import ref_gqa as ref_gqa
from ._shared import ref_rope as ref_rope
from ._shared import ref_swiglu as ref_swiglu
from ._shared import rope_angles as rope_angles
from ._shared import swiglu_state as swiglu_state
from .apply_rope import FLOAT32_ANGLES as FLOAT32_ANGLES
from .apply_rope import _rope_cases, _rope_judge
from .grouped_query_attention import GQA_GENERIC as GQA_GENERIC
from .grouped_query_attention import _gqa_cases, _gqa_judge
from .llama_block import _block_cases, _block_judge
from .llama_block import block_state as block_state
from .llama_block import ref_block as ref_block
from .repeat_kv import _repeat_cases, _repeat_judge
from .swiglu import _swiglu_cases, _swiglu_judge

LESSON = "09_modern_block"


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("apply_rope", _rope_cases, _rope_judge),
    Question("SwiGLU", _swiglu_cases, _swiglu_judge),
    Question("repeat_kv", _repeat_cases, _repeat_judge),
    Question("GroupedQueryAttention", _gqa_cases, _gqa_judge, needs=("apply_rope", "repeat_kv")),
    Question("LlamaBlock", _block_cases, _block_judge, needs=("GroupedQueryAttention", "SwiGLU")),
)

check = _core.lesson_check(QUESTIONS, "apply_rope", devices=False)
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls
