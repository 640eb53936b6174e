"""Lesson 02_layernorm, `layer_norm`: its cases and its judge (its mistakes: `_shared._layer_norm_hint`)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._core import Case, calling, gen, rand
from .._judge import assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import (
    _affine,
    _drawn,
    _expect_dtype,
    _layer_norm_hint,
    _same_input,
    _tol,
    ref_layer_norm,
    reference_layer_norm,
)

REFERENCE = reference_layer_norm  # what replaces an answer that fails (byhand._depends)

# ---------------------------------------------------------------------------------------------
# layer_norm

# (shape, eps (None = the default 1e-5), x mean, x std, dtype)
_LN_VISIBLE = [
    ((3, 5, 4), None, 2.0, 3.0, torch.float32),
    ((2, 6, 7), 0.1, 1.0, 0.2, torch.float64),
    ((4, 3, 5), 1e-5, -1.5, 2.5, torch.float32),
    ((3, 4, 8), None, 0.01, 0.003, torch.float64),  # variance near the default eps: the default shows
]
_LN_HIDDEN = [
    ((6, 8), 0.1, 3.0, 0.3, torch.float32),
    ((2, 3, 5, 6), 1e-5, 0.5, 4.0, torch.float64),
    ((5, 7, 8), None, 0.01, 0.003, torch.float64),  # variance near the default eps
    ((3, 9, 16), 0.05, -2.0, 0.25, torch.float32),
]


def _ln_cases(hidden):
    specs = _LN_HIDDEN if hidden else _LN_VISIBLE
    cases = []
    for i, (shape, eps, mean, std, dt) in enumerate(specs):
        g = gen(2000 + 17 * i + (300 if hidden else 0))
        x = rand(*shape, dtype=dt, mean=mean, std=std, generator=g)
        weight, bias = _affine(shape[-1], dt, g)
        kw = {} if eps is None else {"eps": eps}
        steps = calling("y", "layer_norm", dict(x=x, weight=weight, bias=bias), **kw)
        data = dict(shape=str(tuple(shape)), dtype=str(dt), stats=_drawn(mean, std))
        if eps is None:
            label = msg("x {shape} {dtype} {stats}, random weight and bias, eps=default", **data)
        else:
            label = msg("x {shape} {dtype} {stats}, random weight and bias, eps={eps}", eps=str(eps), **data)
        cases.append(
            Case(
                label,
                steps,
                ["y", "x", "weight", "bias"],
                facts=dict(
                    x=x, weight=weight, bias=bias, eps=1e-5 if eps is None else eps, default_eps=eps is None
                ),
                size=x.numel(),
            )
        )
    return cases


def _ln_judge(case, out):
    f = case.facts
    x, w, b, eps = f["x"], f["weight"], f["bias"], f["eps"]
    exp = F.layer_norm(x.double(), (x.shape[-1],), w.double(), b.double(), eps)
    y = expect_tensor(out["y"], "layer_norm(x, weight, bias)", shape=exp.shape)
    _expect_dtype(y, x.dtype, "layer_norm")
    rtol, atol = _tol(x.dtype)
    hint = _layer_norm_hint(y, x, w, b, eps)
    if not hint and f["default_eps"]:
        hint = diagnose(
            y,
            [
                (
                    N_(
                        "the default eps should be 1e-5 (as F.layer_norm): layer_norm(x, weight, bias, eps=1e-5)"
                    ),
                    lambda e=e: ref_layer_norm(x, w, b, e),
                )
                for e in (1e-6, 1e-8, 1e-12, 0.0)
            ],
        )
    hint = hint or N_(
        "compare step by step: mean and population variance over "
        "the last dim, (x - mean) / sqrt(var + eps), then * weight + bias"
    )
    assert_close(y, exp.to(y.dtype), msg("{x} output", x="layer_norm"), hint, rtol=rtol, atol=atol)
    _same_input(out, f, ("x", "weight", "bias"), "layer_norm")
