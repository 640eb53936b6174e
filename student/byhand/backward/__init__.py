"""Checks for lesson 08_backward: gradients by hand.

Every reference gradient is autograd's, computed in the judge's process in float64 on the inputs the
judge generated (`torch.autograd.grad` through `torch.softmax`, `F.cross_entropy`, `F.layer_norm`,
and the attention of lesson 01). The mistake models are hand-written formulas, one classic mistake each, recomputed
on the same inputs, so a hint names what the answer does ("your dx equals dy * y: only the diagonal
term of the softmax Jacobian").

`LayerNormFunction` needs autograd where the student's code lives, so its cases call the helper
`run_function` there: it applies the Function under `torch.autograd.graph.saved_tensors_hooks`,
runs the backward pass with the judge's `dy` in inference mode (so that a backward which calls
autograd itself raises), and sends back the raw results only: the forward
output, the three gradients, one row of plain numbers per tensor the Function kept for its
backward (saved, or stored on `ctx`), and the error text if backward raised. The judge compares
the gradients with autograd itself and decides from the rows what the Function kept; it never runs
`gradcheck` in the kernel (a submission could fake that verdict, not autograd's numbers here).

The exercises compute gradients by hand: every other answer is called through the helper
`without_autograd`, under torch.inference_mode(), where autograd records no graph, so an answer
that calls torch.autograd.grad or .backward() raises autograd's own error, which the judge names.

A module per exercise, named by it (`softmax_backward.py`, `cross_entropy_backward.py`,
`layer_norm_backward.py`, `attention_backward.py`, `layer_norm_function.py`): its cases, its mistakes
and its judge; what several share (the layer-norm backward's reference and the judge of its
gradients) is in `_shared.py`.
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import LNB_DEFAULT_EPS as LNB_DEFAULT_EPS
from ._shared import ref_layer_norm_backward as ref_layer_norm_backward
from ._shared import ref_ln_grads as ref_ln_grads
from ._shared import without_autograd as without_autograd
from .attention_backward import _attn_cases, _attn_judge
from .attention_backward import ref_attention as ref_attention
from .attention_backward import ref_attention_backward as ref_attention_backward
from .cross_entropy_backward import _ce_cases, _ce_judge
from .cross_entropy_backward import ref_cross_entropy_backward as ref_cross_entropy_backward
from .layer_norm_backward import _ln_cases, _ln_judge
from .layer_norm_function import _fn_cases, _fn_judge
from .layer_norm_function import run_function as run_function
from .softmax_backward import _softmax_cases, _softmax_judge
from .softmax_backward import ref_softmax_backward as ref_softmax_backward

LESSON = "08_backward"
HELPERS = ("run_function", "without_autograd")  # run where the answer lives


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("softmax_backward", _softmax_cases, _softmax_judge),
    Question("cross_entropy_backward", _ce_cases, _ce_judge),
    Question("layer_norm_backward", _ln_cases, _ln_judge),
    Question("attention_backward", _attn_cases, _attn_judge, needs=("softmax_backward",)),
    Question("LayerNormFunction", _fn_cases, _fn_judge, needs=("layer_norm_backward",)),
)

check = _core.lesson_check(QUESTIONS, "softmax_backward", devices=False)
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls
