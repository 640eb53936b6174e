"""The check of `softmax_backward` (lesson 08_backward): its reference, its catalogued mistakes,
its cases and its judge."""

from __future__ import annotations

import torch

from .._core import Case, call, gen, graded, let, rand, ref
from .._judge import diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import BY_HAND, _assert_grad, _autograd, _unchanged, by_hand, reference_softmax_backward

REFERENCE = reference_softmax_backward  # what replaces an answer that fails (byhand._depends)

# ---------------------------------------------------------------------------------------------
# softmax_backward


def ref_softmax_backward(dy, y, mistake=None):
    """dx = y * (dy - sum(dy * y)), or one classic mistake (float64)."""
    dy, y = dy.double(), y.double()
    s = (dy * y).sum(-1, keepdim=True)
    if mistake == "diag_only":
        return dy * y
    if mistake == "jacobian_diagonal":
        return dy * y * (1 - y)
    if mistake == "no_diag":
        return -y * s
    if mistake == "sign":
        return y * (s - dy)
    if mistake == "log_softmax":
        return dy - y * dy.sum(-1, keepdim=True)
    if mistake == "wrong_dim":
        return y * (dy - (dy * y).sum(0, keepdim=True))
    if mistake == "wrong_dim_2":
        return y * (dy - (dy * y).sum(-2, keepdim=True))
    if mistake == "no_keepdim":  # (...,) against (..., n): raises unless the last two dims agree
        return y * (dy - (dy * y).sum(-1))
    if mistake == "full_sum":
        return y * (dy - (dy * y).sum())
    return y * (dy - s)


NO_KEEPDIM = N_(
    "the row sum (dy * y).sum(-1) lost its last dim (no keepdim=True): shape (...,) against dy's (..., n) "
    "lines up with the wrong axis, which raises, or, where the sizes happen to agree, mixes rows. Keep the "
    "dim: (dy * y).sum(dim=-1, keepdim=True)"
)


def _no_keepdim_error(dy, y):
    """The error the row sum without keepdim raises on these inputs (None where it does not raise)."""
    try:
        ref_softmax_backward(dy, y, "no_keepdim")
    except RuntimeError as exc:
        return str(exc)
    return None


_SOFTMAX_MISTAKES = [
    (
        "diag_only",
        N_(
            "your dx equals dy * y: that keeps only the diagonal term diag(y) of the softmax Jacobian "
            "J = diag(y) - y y^T. Every y_j depends on every x_i: subtract y * sum(dy * y, dim=-1, keepdim=True)"
        ),
    ),
    (
        "jacobian_diagonal",
        N_(
            "your dx equals dy * y * (1 - y): that is only the diagonal of the Jacobian (the sigmoid "
            "derivative). The off-diagonal entries -y_i y_j count too: dx = y * (dy - sum(dy * y))"
        ),
    ),
    (
        "no_diag",
        N_("your dx equals -y * sum(dy * y): the diagonal term y * dy of the Jacobian is missing"),
    ),
    ("sign", N_("your dx has the wrong sign: dx = y * (dy - sum(dy * y)), not y * (sum(dy * y) - dy)")),
    (
        "log_softmax",
        N_(
            "your dx equals dy - y * sum(dy): that is the backward of log_softmax, not of softmax; "
            "softmax's is y * (dy - sum(dy * y))"
        ),
    ),
    (
        "wrong_dim",
        N_(
            "the sum(dy * y) runs over the wrong dim (dim 0): the softmax is over the last dim, so sum "
            "over dim=-1 with keepdim=True"
        ),
    ),
    (
        "wrong_dim_2",
        N_(
            "the sum(dy * y) runs over the wrong dim (dim -2): the softmax is over the last dim, so sum "
            "over dim=-1 with keepdim=True"
        ),
    ),
    ("no_keepdim", NO_KEEPDIM),
    (
        "full_sum",
        N_(
            "your sum(dy * y) adds up every entry of the tensor, one number for all rows: each row is its "
            "own softmax, so the dot product is per row, (dy * y).sum(dim=-1, keepdim=True)"
        ),
    ),
]


def _softmax_cases(hidden):
    # (leading dims, n, dtype, logit scale)
    specs = [
        ((3,), 5, torch.float32, 2.0),
        ((2, 4), 7, torch.float64, 1.0),
        ((5, 2, 3), 6, torch.float32, 3.0),
    ]
    if hidden:
        specs = [
            ((4,), 9, torch.float64, 4.0),
            ((3, 5), 11, torch.float32, 0.5),
            ((2, 3, 4), 8, torch.float64, 2.5),
            ((6, 7), 13, torch.float32, 5.0),
        ]
    cases = []
    for i, (lead, n, dt, scale) in enumerate(specs):
        g = gen(8100 + 17 * i + (500 if hidden else 0))
        x = rand(*lead, n, dtype=torch.float64, mean=0.5, std=scale, generator=g)
        y = torch.softmax(x, dim=-1).to(dt)
        dy = rand(*lead, n, dtype=dt, mean=0.4, std=1.5, generator=g)
        err = _no_keepdim_error(dy, y)
        cases.append(
            Case(
                msg(
                    "y = softmax(x) with x {shape} (std {std}), dy {dy_shape} (mean 0.4), {dtype}",
                    shape=tuple(x.shape),
                    std=scale,
                    dy_shape=tuple(dy.shape),
                    dtype=dt,
                ),
                [
                    let("dy", dy),
                    let("y", y),
                    call("dx", BY_HAND, graded("softmax_backward"), ref("dy"), ref("y")),
                ],
                ["dx", "dy", "y"],
                # an answer that raises what the row sum without keepdim raises here is told so
                facts=dict(x=x, y=y, dy=dy, raised_hint=(NO_KEEPDIM, (err,)) if err else None),
                size=x.numel(),
            )
        )
    return cases


def _softmax_judge(case, out):
    f = case.facts
    dy, y = f["dy"], f["y"]
    (exp,) = _autograd(lambda x: torch.softmax(x, dim=-1), [f["x"]], dy)
    dx = expect_tensor(by_hand(out["dx"], "softmax_backward"), "softmax_backward(dy, y)", shape=exp.shape)
    hints = dict(_SOFTMAX_MISTAKES)
    hint = diagnose(dx, [(hints[k], lambda k=k: ref_softmax_backward(dy, y, k)) for k in hints])
    _assert_grad(
        dx,
        exp,
        msg("dx (the gradient w.r.t. x)"),
        hint or "dx = y * (dy - sum(dy * y, dim=-1))",  # code: the same in every language
        y.dtype,
    )
    _unchanged(out, f, ("dy", "y"), "softmax_backward")
