"""Lesson 04_pre_post_ln, `ResidualStack`: its cases, its mistakes and its judge."""

from __future__ import annotations

import torch

from .. import _judge
from .._core import got_expected, hint_line
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import ReferenceResidualStack, _stack_case, _tol, ref_forward

REFERENCE = ReferenceResidualStack  # what replaces an answer that fails (byhand._depends)

# ---------------------------------------------------------------------------------------------
# ResidualStack

# (depth, d_model, pre_ln, batch dims, dtype)
_STACK_VISIBLE = [
    (3, 10, None, (4,), torch.float64),  # pre_ln left out: the signature's default, Pre-LN
    (3, 10, False, (4,), torch.float64),
    (5, 16, True, (2, 3), torch.float32),
    (5, 16, False, (2, 3), torch.float32),
]
_STACK_HIDDEN = [
    (7, 24, True, (3, 5), torch.float64),
    (7, 24, False, (3, 5), torch.float64),
    (12, 20, True, (6,), torch.float32),
    (12, 20, False, (6,), torch.float32),
    (2, 33, False, (2, 2, 3), torch.float64),
]


def _stack_cases(hidden):
    specs = _STACK_HIDDEN if hidden else _STACK_VISIBLE
    return [
        _stack_case(*spec, seed=4000 + 17 * i + (900 if hidden else 0), what="forward")
        for i, spec in enumerate(specs)
    ]


def y_double(out, name="y"):
    """The stack's output `name` in float64 (empty when it is not a tensor)."""
    y = out.get(name)
    return y.double() if isinstance(y, torch.Tensor) else torch.empty(0)


STACK_OUTPUT = msg("{name} output", name="ResidualStack")


def _stack_judge(case, out):
    f = case.facts
    state, depth, x, pre_ln = f["state"], f["depth"], f["x"], f["pre_ln"]
    exp = ref_forward(state, depth, x, pre_ln)
    if f.get("default"):  # built without pre_ln, and the same stack built with pre_ln=True
        if not _judge.close(y_double(out, "y_explicit"), exp, **_tol(x.dtype)):
            out = {**out, "y": out.get("y_explicit")}  # the stack's own mistakes are named first
        elif not _judge.close(y_double(out), exp, **_tol(x.dtype)):
            post = _judge.close(y_double(out), ref_forward(state, depth, x, False), **_tol(x.dtype))
            raise CheckFailure(
                msg(
                    "ResidualStack(depth, d_model), built without pre_ln, does not compute what "
                    "ResidualStack(depth, d_model, pre_ln=True) computes."
                )
                + got_expected(
                    "Post-LN" if post else _judge._fmt(y_double(out)), "Pre-LN" if post else _judge._fmt(exp)
                )
                + hint_line(
                    N_("the signature's default is pre_ln=True: __init__(self, depth, d_model, pre_ln=True)")
                )
            )
    y = expect_tensor(out["y"], STACK_OUTPUT, shape=exp.shape)
    _judge.expect_dtype(y, x.dtype, STACK_OUTPUT)
    want, other = ("Pre-LN", "Post-LN") if pre_ln else ("Post-LN", "Pre-LN")
    hint = diagnose(
        y,
        [
            (
                msg(
                    "Pre-LN and Post-LN are swapped: pre_ln={pre_ln} asks for {want}, yours computes {other}. "
                    "Pre-LN is h + linears[i](norms[i](h)) (the norm inside the branch); Post-LN is "
                    "norms[i](h + linears[i](h)) (the norm after the sum)",
                    pre_ln=str(pre_ln),
                    want=want,
                    other=other,
                ),
                lambda: ref_forward(state, depth, x, not pre_ln),
            ),
            (
                N_(
                    "the residual path is missing: each block adds its branch to h (h + ...), it does not replace h"
                ),
                lambda: ref_forward(state, depth, x, pre_ln, "no_residual"),
            ),
            (
                N_("the head is missing: forward(x) = head(h_depth)"),
                lambda: ref_forward(state, depth, x, pre_ln, "no_head"),
            ),
            (
                N_("every block uses norms[0] and linears[0]: block i must use norms[i] and linears[i]"),
                lambda: ref_forward(state, depth, x, pre_ln, "shared"),
            ),
        ],
    )
    assert_close(
        y.double(),
        exp,
        STACK_OUTPUT,
        hint
        or msg(
            "block i is {block}, for i = 0..depth-1, then head(h)",
            block="h + linears[i](norms[i](h))" if pre_ln else "norms[i](h + linears[i](h))",
        ),
        **_tol(x.dtype),
    )
    if not _judge.close(out["x"], x):
        raise CheckFailure(
            msg("ResidualStack modified its input x in place: use out-of-place ops (h = h + ...)")
        )
