"""Lesson 04_pre_post_ln, `block_grad_norms`: its cases, its mistakes and its judge."""

from __future__ import annotations

import torch

from .. import _judge
from .._core import hint_line
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import _stack_case, _tol, ref_block_grad_norms, ref_forward

# the earlier answers its check runs: the reference of each when the student's fails its own check
EARLIER = ("ResidualStack",)

# ---------------------------------------------------------------------------------------------
# block_grad_norms

_GRAD_VISIBLE = [
    (4, 12, True, (5,), torch.float64),
    (4, 12, False, (5,), torch.float64),
    (6, 16, True, (3, 4), torch.float32),
    (6, 16, False, (3, 4), torch.float32),
]
_GRAD_HIDDEN = [
    (9, 20, True, (7,), torch.float64),
    (9, 20, False, (7,), torch.float64),
    (12, 24, True, (2, 6), torch.float32),
    (12, 24, False, (2, 6), torch.float32),
]


def _grad_cases(hidden):
    specs = _GRAD_HIDDEN if hidden else _GRAD_VISIBLE
    return [
        _stack_case(*spec, seed=5000 + 23 * i + (900 if hidden else 0), what="grads")
        for i, spec in enumerate(specs)
    ]


def _grad_judge(case, out):
    f = case.facts
    state, depth, x, pre_ln = f["state"], f["depth"], f["x"], f["pre_ln"]
    exp = ref_block_grad_norms(state, depth, x, pre_ln)
    got = out["g"]
    if isinstance(got, (list, tuple)) and all(isinstance(v, (float, torch.Tensor)) for v in got):
        raise CheckFailure(
            msg(
                "block_grad_norms should return one tensor of shape ({depth},), got a {type} of {n} values",
                depth=str(depth),
                type=type(got).__name__,
                n=str(len(got)),
            )
            + hint_line(N_("torch.stack the norms"))
        )
    got = expect_tensor(got, "block_grad_norms(stack, x)")
    if tuple(got.shape) == (depth + 1,):
        raise CheckFailure(
            msg(
                "block_grad_norms returned {n} norms, expected {depth} (one per block).",
                n=str(depth + 1),
                depth=str(depth),
            )
            + hint_line(N_("only linears[i].weight for i in range(depth): the head is not a block"))
        )
    expect_tensor(got, "block_grad_norms(stack, x)", shape=(depth,))
    fwd = ref_forward(state, depth, x, pre_ln)
    stack_ok = isinstance(out["y"], torch.Tensor) and _judge.close(out["y"].double(), fwd, **_tol(x.dtype))
    hint = diagnose(
        got.double(),
        [
            (
                N_("these are the norms of linears[i].bias.grad: take linears[i].weight.grad"),
                lambda: ref_block_grad_norms(state, depth, x, pre_ln, kind="bias"),
            ),
            (
                N_(
                    "the norms are in reverse order: entry i is block i (linears[i]), from the input to the output"
                ),
                lambda: ref_block_grad_norms(state, depth, x, pre_ln).flip(0),
            ),
            (
                N_(
                    "these are the gradients of the LayerNorms (norms[i].weight.grad): take linears[i].weight.grad"
                ),
                lambda: ref_block_grad_norms(state, depth, x, pre_ln, param="norms"),
            ),
            (
                N_(
                    "these are squared norms: the Frobenius norm is the square root of the sum of squares "
                    "(tensor.norm())"
                ),
                lambda: ref_block_grad_norms(state, depth, x, pre_ln) ** 2,
            ),
            (
                N_("the loss is stack(x).pow(2).sum(): use .mean()"),
                lambda: ref_block_grad_norms(state, depth, x, pre_ln, loss="sum"),
            ),
            (
                N_("the loss is stack(x).mean(): square first, stack(x).pow(2).mean()"),
                lambda: ref_block_grad_norms(state, depth, x, pre_ln, loss="no_square"),
            ),
            (
                N_("these are the norms of the weights themselves, not of their gradients (.weight.grad)"),
                lambda: torch.stack([state[f"linears.{i}.weight"].double().norm() for i in range(depth)]),
            ),
            (
                N_(
                    "the gradients were accumulated twice (two backward passes?): one forward and one backward"
                ),
                lambda: 2 * ref_block_grad_norms(state, depth, x, pre_ln),
            ),
        ],
    )
    if not hint and not stack_ok:
        hint = N_(
            "your ResidualStack's forward is not right (see its own self-check): block_grad_norms "
            "runs your stack, so fix ResidualStack first"
        )
    assert_close(
        got.double(),
        exp,
        "block_grad_norms(stack, x)",
        hint
        or N_(
            "one forward and backward of stack(x).pow(2).mean(), then "
            "[stack.linears[i].weight.grad.norm() for i in range(depth)], stacked"
        ),
        rtol=1e-3 if x.dtype != torch.float64 else 1e-6,
        atol=1e-6 if x.dtype != torch.float64 else 1e-10,
    )
    if not _judge.close(out["x"], x):
        raise CheckFailure(msg("block_grad_norms modified its input x in place"))
