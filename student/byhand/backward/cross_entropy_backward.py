"""The check of `cross_entropy_backward` (lesson 08_backward): its reference, its catalogued
mistakes, its cases and its judge."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._core import Case, call, gen, graded, hint_line, let, rand, ref
from .._judge import CheckFailure, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import BY_HAND, _assert_grad, _autograd, _unchanged, by_hand

# ---------------------------------------------------------------------------------------------
# cross_entropy_backward


def ref_cross_entropy_backward(logits, target, mistake=None):
    """d F.cross_entropy(logits, target) / d logits (mean over the rows), or one classic mistake (float64)."""
    z = logits.double()
    n = z.shape[0]
    p = torch.softmax(z, dim=0 if mistake == "softmax_dim0" else -1)
    onehot = F.one_hot(target, z.shape[-1]).double()
    if mistake == "sum_not_mean":
        return p - onehot
    if mistake == "mean_over_all":
        return (p - onehot) / z.numel()
    if mistake == "sign":
        return (onehot - p) / n
    if mistake == "no_onehot":
        return p / n
    if mistake == "logits_not_probabilities":
        return (z - onehot) / n
    return (p - onehot) / n


_CE_MISTAKES = [
    (
        "sum_not_mean",
        N_(
            "your dlogits is N times too large: F.cross_entropy averages the loss over the N rows, so "
            "every row's gradient is divided by N"
        ),
    ),
    (
        "mean_over_all",
        N_(
            "your dlogits is divided by N * C, every entry of the logits: the loss is a mean over the N "
            "rows only (one loss per row), so divide by N"
        ),
    ),
    (
        "sign",
        N_(
            "your dlogits has the wrong sign: raising the target's logit lowers the loss, so its gradient "
            "is negative there and positive at the other classes"
        ),
    ),
    (
        "no_onehot",
        N_(
            "your dlogits is the probabilities alone, p / N: the -log p[target] term also gives -1 at each "
            "row's target class, which is missing"
        ),
    ),
    (
        "logits_not_probabilities",
        N_(
            "your dlogits uses the logits where the probabilities belong: the softmax of the logits enters "
            "the gradient, not the logits themselves"
        ),
    ),
    (
        "softmax_dim0",
        N_(
            "your softmax runs over the rows (dim 0): each row's logits are their own softmax, over the "
            "classes, dim=-1"
        ),
    ),
]

_CE_DIVIDES_BY_P = N_(
    "your dlogits has inf or NaN where autograd's is finite: a chain that divides by p (the log's "
    "gradient -1 / p[target] fed into softmax_backward) breaks when p[target] underflows to 0, as "
    "it does here for logits this far apart. Multiply the two steps out on paper: the 1 / p "
    "cancels, and what is left needs no division"
)


def _ce_cases(hidden):
    # (N rows, C classes, dtype, logit std); the last visible case has logits 200 apart (p underflows)
    specs = [
        (4, 5, torch.float64, 1.5),
        (6, 3, torch.float32, 2.0),
        (3, 7, torch.float32, 60.0),
    ]
    if hidden:
        specs = [
            (9, 11, torch.float64, 3.0),
            (2, 13, torch.float32, 0.5),
            (7, 4, torch.float64, 80.0),
            (12, 6, torch.float32, 1.0),
        ]
    cases = []
    for i, (n, c, dt, scale) in enumerate(specs):
        g = gen(8500 + 29 * i + (500 if hidden else 0))
        z = rand(n, c, dtype=dt, mean=0.7, std=scale, generator=g)
        t = torch.randint(0, c, (n,), generator=g)
        if scale > 10:  # make some target the row's smallest logit: p[target] underflows to 0
            t[0] = int(z[0].argmin())
        cases.append(
            Case(
                msg(
                    "logits {shape} (std {std}), target {target_shape} int64, {dtype}",
                    shape=(n, c),
                    std=scale,
                    target_shape=(n,),
                    dtype=dt,
                ),
                [
                    let("logits", z),
                    let("target", t),
                    call("dlogits", BY_HAND, graded("cross_entropy_backward"), ref("logits"), ref("target")),
                ],
                ["dlogits", "logits", "target"],
                facts=dict(logits=z, target=t),
                size=z.numel() * (100 if scale > 10 else 1),  # the underflow case is judged last
            )
        )
    return cases


def _ce_judge(case, out):
    f = case.facts
    z, t = f["logits"], f["target"]
    (exp,) = _autograd(lambda z_: F.cross_entropy(z_, t), [z], torch.tensor(1.0, dtype=torch.float64))
    got = by_hand(out["dlogits"], "cross_entropy_backward")
    got = expect_tensor(got, "cross_entropy_backward(logits, target)", shape=exp.shape)
    if not torch.isfinite(got).all():
        what = msg("{name} from {who}", name="dlogits", who="cross_entropy_backward")
        raise CheckFailure(msg("{what} contains inf or NaN.", what=what) + hint_line(_CE_DIVIDES_BY_P))
    hints = dict(_CE_MISTAKES)
    hint = diagnose(got, [(hints[k], lambda k=k: ref_cross_entropy_backward(z, t, k)) for k in hints])
    _assert_grad(
        got,
        exp,
        msg("dlogits (the gradient of the mean cross-entropy w.r.t. the logits)"),
        hint or msg("chain the log's gradient at the target class into the softmax's backward and simplify"),
        z.dtype,
    )
    _unchanged(out, f, ("logits",), "cross_entropy_backward")
