"""Lesson 02_layernorm, `rms_norm`: its cases and its judge (its mistakes: `_shared._rms_hint`)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._core import Case, call, gen, let, rand, ref
from .._judge import assert_close, expect_tensor
from ..i18n import N_, msg
from ._shared import _drawn, _expect_dtype, _rms_hint, _same_input, _tol, reference_rms_norm

REFERENCE = reference_rms_norm  # what replaces an answer that fails (byhand._depends)

# ---------------------------------------------------------------------------------------------
# rms_norm

# (shape, eps (None = default 1e-6), x mean, x std, dtype)
_RMS_VISIBLE = [
    ((3, 5, 4), None, 2.0, 0.5, torch.float32),
    ((2, 4, 6), 0.1, 0.3, 0.2, torch.float64),
    ((4, 3, 7), 1e-6, -1.0, 3.0, torch.float32),
    ((3, 4, 8), None, 0.0008, 0.0005, torch.float64),  # mean square near the default eps
]
_RMS_HIDDEN = [
    ((6, 8), 0.05, 1.5, 0.3, torch.float64),
    ((2, 3, 5, 9), None, -0.5, 2.0, torch.float32),
    ((5, 7, 16), None, 0.0008, 0.0005, torch.float64),  # mean square near the default eps
    ((3, 6, 10), 1e-6, 3.0, 1.0, torch.float64),
]


def _rms_cases(hidden):
    specs = _RMS_HIDDEN if hidden else _RMS_VISIBLE
    cases = []
    for i, (shape, eps, mean, std, dt) in enumerate(specs):
        g = gen(3000 + 23 * i + (300 if hidden else 0))
        x = rand(*shape, dtype=dt, mean=mean, std=std, generator=g)
        weight = rand(shape[-1], dtype=dt, mean=1.5, std=0.5, generator=g)
        kw = {} if eps is None else {"eps": eps}
        steps = [let("x", x), let("weight", weight), call("y", "rms_norm", ref("x"), ref("weight"), **kw)]
        data = dict(shape=str(tuple(shape)), dtype=str(dt), stats=_drawn(mean, std))
        if eps is None:
            label = msg("x {shape} {dtype} {stats}, random weight, eps=default", **data)
        else:
            label = msg("x {shape} {dtype} {stats}, random weight, eps={eps}", eps=str(eps), **data)
        cases.append(
            Case(
                label,
                steps,
                ["y", "x", "weight"],
                facts=dict(x=x, weight=weight, eps=1e-6 if eps is None else eps, default_eps=eps is None),
                size=x.numel(),
            )
        )
    return cases


def _rms_judge(case, out):
    f = case.facts
    x, w, eps = f["x"], f["weight"], f["eps"]
    exp = F.rms_norm(x.double(), (x.shape[-1],), w.double(), eps)
    y = expect_tensor(out["y"], "rms_norm(x, weight)", shape=exp.shape)
    _expect_dtype(y, x.dtype, "rms_norm")
    rtol, atol = _tol(x.dtype)
    hint = _rms_hint(y, x, w, eps, f["default_eps"]) or N_(
        "y = x / sqrt(mean(x^2 over the last dim) + eps) * weight"
    )
    assert_close(y, exp.to(y.dtype), msg("{x} output", x="rms_norm"), hint, rtol=rtol, atol=atol)
    _same_input(out, f, ("x", "weight"), "rms_norm")
