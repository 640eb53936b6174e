"""Checks for lesson 12_training: the training loop by hand.

The references are PyTorch's own: `F.cross_entropy`, `torch.optim.AdamW` (foreach=False),
`torch.nn.utils.clip_grad_norm_`, run in the judge's process on the inputs the case sent. The
schedule has no single torch class; its reference is the contract's formula (its cosine part is
`torch.optim.lr_scheduler.CosineAnnealingLR`'s closed form, tests/test_claims_12.py checks that).

The stateful exercises run through helpers in the student's kernel, which return plain numbers
only: `run_adamw` trains a few parameters for hundreds of steps on a noisy quadratic (the gradient
is recomputed from the parameters each step, so a wrong update changes every later gradient),
changes the learning rate as a schedule would, leaves one parameter without a gradient, and in
some cases round-trips the optimizer through `state_dict()` halfway; `clip` clips gradients of
fresh parameters; `batches` draws windows from a numpy array, an `np.memmap` or a tensor with
seeded generators; `resume` trains a small model, checkpoints it, keeps going, then loads the
checkpoint into a fresh model and optimizer and trains again. On a mismatch the classic mistakes
are recomputed here with one thing changed, so the hint names the one the answer makes.

A module per exercise, named by it (`cross_entropy.py`, `adamw.py` for `AdamW`,
`lr_cosine_schedule.py`, `clip_grad_norm.py` for `clip_grad_norm_`, `get_batch.py`, `checkpoint.py`):
its helper, its cases, its mistakes and its judge; `_shared.py` holds the float64 dtype they share.
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import F64
from .adamw import _adamw_cases, _adamw_judge, run_adamw
from .checkpoint import _ckpt_cases, _ckpt_judge, resume
from .clip_grad_norm import _clip_cases, _clip_judge, clip
from .cross_entropy import CE_CALL, OVERFLOW, _ce_cases, _ce_judge, by_hand, ref_cross_entropy
from .get_batch import _batch_cases, _batch_judge, batches
from .lr_cosine_schedule import _sched_cases, _sched_judge, ref_schedule, schedule

LESSON = "12_training"
HELPERS = ("by_hand", "run_adamw", "schedule", "clip", "batches", "resume")


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("cross_entropy", _ce_cases, _ce_judge),
    Question("AdamW", _adamw_cases, _adamw_judge),
    Question("lr_cosine_schedule", _sched_cases, _sched_judge),
    Question("clip_grad_norm_", _clip_cases, _clip_judge),
    Question("get_batch", _batch_cases, _batch_judge),
    Question("checkpoint", _ckpt_cases, _ckpt_judge, needs=("save_checkpoint", "load_checkpoint")),
)

check = _core.lesson_check(QUESTIONS, "cross_entropy", devices=False)
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls

__all__ = [
    "LESSON",
    "HELPERS",
    "QUESTIONS",
    "check",
    "CE_CALL",
    "F64",
    "OVERFLOW",
    "batches",
    "by_hand",
    "clip",
    "ref_cross_entropy",
    "ref_schedule",
    "resume",
    "run_adamw",
    "schedule",
]
