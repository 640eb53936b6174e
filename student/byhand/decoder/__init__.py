"""Checks for lesson 07_decoder: the shift, causal self-attention with a KV cache, a GPT, sampling,
generation.

The references are float64 functions in this package, run in the judge's process with the weights
the case sent to the student's module. Every property is probed by behaviour: a perturbed future
token must not change earlier outputs; a run with a KV cache must equal the run over the whole
sequence; the tied output weight must be the embedding's own parameter (loading two different
matrices into a tied model leaves one); sampling is judged by the frequencies of many seeded draws
(temperature 0 and top_k=1 are deterministic). The classic mistakes are recomputed by the same
references with one thing changed, so a hint can say which one. The graded names and their
behaviour are documented in docs/api/07_decoder.md.

A module per exercise, named by it (`shift_targets.py`, `causal_self_attention.py`, `gpt.py`,
`gpt_init.py`, `sample_next.py`, `generate.py`): its cases, its mistakes and its judge; what several
share (the references of the attention and of the GPT) is in `_shared.py`.
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import CACHED as CACHED
from ._shared import F64 as F64
from ._shared import attn_state as attn_state
from ._shared import gpt_state as gpt_state
from ._shared import ref_attention as ref_attention
from ._shared import ref_gpt as ref_gpt
from .causal_self_attention import OTHER_DEVICE as OTHER_DEVICE
from .causal_self_attention import _attn_cases, _attn_judge
from .causal_self_attention import attend as attend
from .causal_self_attention import on_other_device as on_other_device
from .generate import GENERATE_DEFAULTS as GENERATE_DEFAULTS
from .generate import MAX_RECORDED as MAX_RECORDED
from .generate import _gen_cases, _gen_judge
from .generate import record_generate as record_generate
from .generate import ref_generate as ref_generate
from .gpt import _gpt_cases, _gpt_judge
from .gpt_init import INIT_MARGIN as INIT_MARGIN
from .gpt_init import INIT_STD as INIT_STD
from .gpt_init import _init_cases, _init_judge
from .gpt_init import init_stats as init_stats
from .sample_next import N_DRAWS as N_DRAWS
from .sample_next import SIGMAS as SIGMAS
from .sample_next import _sample_cases, _sample_judge
from .sample_next import sampling_probs as sampling_probs
from .shift_targets import _shift_cases, _shift_judge

LESSON = "07_decoder"
HELPERS = ("record_generate", "init_stats", "attend", "on_other_device")


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("shift_targets", _shift_cases, _shift_judge),
    Question("CausalSelfAttention", _attn_cases, _attn_judge),
    Question("GPT", _gpt_cases, _gpt_judge, needs=("CausalSelfAttention",)),
    Question("GPT_init", _init_cases, _init_judge, needs=("GPT",)),
    Question("sample_next", _sample_cases, _sample_judge),
    Question("generate", _gen_cases, _gen_judge, needs=("GPT", "sample_next")),
)

check = _core.lesson_check(QUESTIONS, "CausalSelfAttention", devices=False)
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls
