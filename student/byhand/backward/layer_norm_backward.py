"""The check of `layer_norm_backward` (lesson 08_backward): its cases and its judge (the reference,
its catalogued mistakes and the judge of the gradients are in `_shared.py`: `LayerNormFunction`'s
check runs them too)."""

from __future__ import annotations

import torch

from .._core import Case, call, gen, graded, let, rand, ref
from ..i18n import N_, msg
from ._shared import BY_HAND, _ln_grads_judge, _unchanged, by_hand, reference_layer_norm_backward

REFERENCE = reference_layer_norm_backward  # what replaces an answer that fails (byhand._depends)


def _ln_cases(hidden):
    # (leading dims, d, eps or None, x mean, x std, dtype)
    specs = [
        ((5,), 4, None, 1.0, 2.0, torch.float32),
        (
            (3, 4),
            6,
            1e-5,
            -0.5,
            0.5,
            torch.float64,
        ),  # dy a transposed view (not contiguous), as autograd may pass it
        ((2, 3, 5), 7, 0.1, 2.0, 0.3, torch.float32),
        ((4,), 6, None, 0.5, 0.01, torch.float64),  # variance near the default eps: the default shows
        ((), 5, 0.1, 1.0, 2.0, torch.float32),  # one token, no leading dims, as a hidden case has
    ]
    if hidden:
        specs = [
            ((7,), 8, 0.1, 0.5, 0.25, torch.float64),
            ((4, 5), 9, None, -3.0, 4.0, torch.float32),
            ((2, 3, 4), 5, 1e-3, 1.0, 0.1, torch.float64),
            ((3, 2, 2, 3), 11, 1e-5, 0.0, 1.5, torch.float32),
            ((), 10, None, 1.0, 2.0, torch.float64),  # one token, no leading dims
        ]
    cases = []
    for i, (lead, d, eps, mean, std, dt) in enumerate(specs):
        g = gen(8200 + 31 * i + (500 if hidden else 0))
        x = rand(*lead, d, dtype=dt, mean=mean, std=std, generator=g)
        w = rand(d, dtype=dt, mean=1.5, std=0.5, generator=g)
        dy = rand(*lead, d, dtype=dt, mean=0.5, std=1.0, generator=g)
        kw = {} if eps is None else {"eps": eps}
        strided = not hidden and i == 1
        if strided:  # the same values, as a transposed view of a contiguous tensor
            steps = [
                let("dy_t", dy.transpose(0, 1).contiguous()),
                call("dy", ref("dy_t", "transpose"), 0, 1),
                let("x", x),
                let("weight", w),
            ]
        else:
            steps = [let("dy", dy), let("x", x), let("weight", w)]
        answer = graded("layer_norm_backward")
        steps.append(call("grads", BY_HAND, answer, ref("dy"), ref("x"), ref("weight"), **kw))
        if eps is None:  # the same call with eps=1e-5 given: its own mistakes are named before the default's
            steps.append(
                call("grads_explicit", BY_HAND, answer, ref("dy"), ref("x"), ref("weight"), eps=1e-5)
            )
        label = msg(
            "x {shape} (mean {mean}, std {std}), {dy}, random weight, {eps}, {dtype}",
            shape=tuple(x.shape),
            mean=mean,
            std=std,
            dy=msg("dy {shape} (a non-contiguous transposed view)", shape=tuple(dy.shape))
            if strided
            else f"dy {tuple(dy.shape)}",
            eps=N_("eps=default") if eps is None else f"eps={eps}",
            dtype=dt,
        )
        facts = dict(x=x, weight=w, dy=dy, eps=1e-5 if eps is None else eps, default_eps=eps is None)
        size = x.numel() if lead else 10**6  # judged last: the other cases name the usual mistakes
        outputs = ["grads", "dy", "x", "weight"] + (["grads_explicit"] if eps is None else [])
        cases.append(Case(label, steps, outputs, facts=facts, size=size))
    return cases


def _ln_judge(case, out):
    f = case.facts
    x, w, dy, eps = f["x"], f["weight"], f["dy"], f["eps"]
    b = torch.zeros_like(w)
    if "grads_explicit" in out:
        grads = by_hand(out["grads_explicit"], "layer_norm_backward")
        _ln_grads_judge(grads, x, w, b, eps, dy, "layer_norm_backward")
    grads = by_hand(out["grads"], "layer_norm_backward")
    _ln_grads_judge(grads, x, w, b, eps, dy, "layer_norm_backward", f.get("default_eps", False))
    _unchanged(out, f, ("dy", "x", "weight"), "layer_norm_backward")
