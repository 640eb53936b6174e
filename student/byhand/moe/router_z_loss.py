"""The check of `router_z_loss` (lesson 13_mixture_of_experts): ST-MoE's mean(logsumexp(logits)^2),
on logits shifted far enough that a naive log(sum(exp)) overflows; catalogued mistakes: no square,
a sum, the square of the mean, the wrong dim, the overflow."""

from __future__ import annotations

import torch

from .._core import Case, calling, gen, rand
from .._judge import inputs_unchanged
from ..i18n import N_, msg
from ._shared import F64, compare, ref_z


def _specs(hidden):
    # (shape, shift, dtype)
    if not hidden:
        return [
            ((12, 5), 0.0, torch.float32),
            ((3, 7, 4), 2.0, torch.float64),
            ((9, 6), 120.0, torch.float32),
            ((10, 3), 800.0, torch.float64),
        ]
    return [((2, 5, 8), -3.0, torch.float32), ((14, 9), 1000.0, torch.float64)]


def _z_cases(hidden):
    cases = []
    for i, (shape, shift, dt) in enumerate(_specs(hidden)):
        g = gen(13900 + 41 * i + (700 if hidden else 0))
        logits = rand(*shape, dtype=dt, mean=shift, std=1.5, generator=g)
        label = msg(
            "logits {shape} {dtype}, mean {shift}", shape=tuple(shape), dtype=str(dt)[6:], shift=shift
        )
        steps = calling("z", "router_z_loss", dict(logits=logits))
        cases.append(
            Case(label, steps, ["z", "logits"], facts=dict(logits=logits, dt=dt), size=logits.numel())
        )
    return cases


def _naive(logits):
    return (
        logits.to(torch.float32 if logits.dtype == torch.float32 else F64).exp().sum(-1).log().to(F64) ** 2
    ).mean()


def _z_judge(case, out):
    lg, dt = case.facts["logits"], case.facts["dt"]
    mistakes = [
        (
            N_("the square is missing: the mean of logsumexp(logits, -1) ** 2"),
            lambda: ref_z(lg, square=False),
        ),
        (N_("your loss is a sum over the tokens: take the mean"), lambda: ref_z(lg, reduce="sum")),
        (
            N_("your loss squares the mean: square each token's logsumexp, then average"),
            lambda: ref_z(lg, outer=True),
        ),
        (N_("the logsumexp is over the wrong dim: over the experts, the last dim"), lambda: ref_z(lg, dim=0)),
        (
            N_(
                "log(sum(exp(logits))) overflows for large logits: use torch.logsumexp, which subtracts the max first"
            ),
            lambda: _naive(lg),
        ),
    ]
    compare(
        out["z"],
        ref_z(lg),
        dt,
        msg("{name} output", name="router_z_loss"),
        mistakes,
        N_("mean over the tokens of torch.logsumexp(logits, dim=-1) ** 2"),
    )
    inputs_unchanged(out, case.facts, ("logits",), "router_z_loss")
