"""causal_skipping: flash_attention_forward with is_causal=True must skip the key blocks wholly
above the diagonal; judged on the matmul FLOPs the observer counted."""

from __future__ import annotations

import torch

from .._core import Case, gen, got_expected, hint_line
from .._judge import CheckFailure, assert_close, expect_tensor
from ..i18n import msg
from ._shared import (
    SKIP_LIMIT,
    _facts,
    _flops_of_dense,
    _inputs,
    _label,
    _observed,
    _pair,
    _tols,
    judge_flops_seen,
    ref_forward,
)

# an integration question: the student's answers are kept (byhand._depends), as the lesson
# says before the exercise: "The next check runs your forward pass with is_causal=True"
BUILDS_ON = ("flash_attention_forward",)


def _skip_cases(hidden):
    # (leading dims, L, d, block_q, block_k, dtype)
    specs = [
        ((2,), 128, 8, 16, 16, torch.float32),
        ((2,), 96, 6, 12, 8, torch.float32),
        ((1,), 100, 8, 10, 20, torch.float64),
    ]
    if hidden:
        specs = [((2, 2), 96, 6, 12, 8, torch.float64), ((3,), 120, 8, 8, 24, torch.float32)]
    cases = []
    for i, (lead, L, d, bq, bk, dt) in enumerate(specs):
        g = gen(10300 + 41 * i + (500 if hidden else 0))
        q, k, v = _inputs(lead, L, L, d, d, dt, g)
        steps = _observed(
            "flash_attention_forward", dict(q=q, k=k, v=v), is_causal=True, block_q=bq, block_k=bk
        )
        cases.append(
            Case(
                _label(q, k, v, True, bq, bk, dt),
                steps,
                ["r"],
                facts=_facts(q, k, v, True, bq, bk),
                size=q.numel(),
            )
        )
    return cases


def _skip_judge(case, out):
    f = case.facts
    q, k, v = f["q"], f["k"], f["v"]
    who = "flash_attention_forward(..., is_causal=True)"
    (o, _lse), (largest, flops, ops) = _pair(out["r"], who, ("o", "lse"))
    o_exp, _ = ref_forward(q, k, v, True)
    rtol, atol = _tols(o_exp, q.dtype)
    assert_close(
        expect_tensor(o, "o", shape=o_exp.shape),
        o_exp.to(q.dtype),
        msg("o with is_causal=True"),
        msg("the causal output is wrong: fix flash_attention_forward's causal case first"),
        rtol=rtol,
        atol=atol,
    )
    dense = 4 * f["heads"] * f["lq"] * f["lk"] * q.shape[-1]
    judge_flops_seen(f, flops, dense // 2, who)
    if flops > SKIP_LIMIT * dense:
        raise CheckFailure(
            msg("{who} computes the blocks above the diagonal.", who=who)
            + got_expected(
                _flops_of_dense(flops, dense),
                msg(
                    "at most {n} ({ratio} of the dense {dense}); skipping "
                    "the blocks wholly above the diagonal leaves about half",
                    n=int(SKIP_LIMIT * dense),
                    ratio=SKIP_LIMIT,
                    dense=dense,
                ),
            )
            + hint_line(
                msg(
                    "the answer masks the blocks above the diagonal instead of skipping them: for query block "
                    "[i0, i1), stop the key loop at key i1 - 1 (range(0, i1, block_k)), and mask only the blocks "
                    "that cross the diagonal"
                )
            )
        )
