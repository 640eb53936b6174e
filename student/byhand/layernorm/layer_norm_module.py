"""Lesson 02_layernorm, `LayerNorm` (the module): its cases and its judge."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._core import gen, rand
from .._judge import assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import (
    _affine,
    _drawn,
    _expect_dtype,
    _layer_norm_hint,
    _module_case,
    _param_checks,
    _same_input,
    _tol,
    ref_layer_norm,
)

# a forward that calls the student's layer_norm: the reference one when that fails its own check
EARLIER = ("layer_norm",)

# ---------------------------------------------------------------------------------------------
# LayerNorm (module)

# (shape, eps (None = default), random state?, x mean, x std, dtype)
_LNM_VISIBLE = [
    ((2, 3, 4), None, False, 1.0, 2.0, torch.float32),
    ((3, 4, 6), 0.1, True, 2.0, 0.25, torch.float64),
    ((4, 5, 7), None, True, 0.01, 0.003, torch.float32),
]  # variance near the default eps
_LNM_HIDDEN = [
    ((5, 6, 8), 1e-3, True, -3.0, 0.05, torch.float64),
    ((7, 12), None, True, 2.0, 5.0, torch.float32),
    ((2, 3, 4, 5), 0.1, True, 0.5, 0.2, torch.float32),
]


def _lnm_cases(hidden):
    specs = _LNM_HIDDEN if hidden else _LNM_VISIBLE
    cases = []
    for i, (shape, eps, with_state, mean, std, dt) in enumerate(specs):
        g = gen(2500 + 31 * i + (300 if hidden else 0))
        d = shape[-1]
        x = rand(*shape, dtype=dt, mean=mean, std=std, generator=g)
        weight, bias = (
            _affine(d, dt, g) if with_state else (torch.ones(d, dtype=dt), torch.zeros(d, dtype=dt))
        )
        cases.append(
            _module_case(
                "LayerNorm",
                x,
                eps,
                {"weight": weight, "bias": bias} if with_state else None,
                with_state,
                _drawn(mean, std),
                dict(weight=weight, bias=bias, eps=1e-5 if eps is None else eps),
            )
        )
    return cases


def _lnm_judge(case, out):
    f = case.facts
    x, w, b, eps = f["x"], f["weight"], f["bias"], f["eps"]
    d = x.shape[-1]
    if f["fresh"]:
        _param_checks(out, "ln", d, x.dtype, "LayerNorm")
    exp = F.layer_norm(x.double(), (d,), w.double(), b.double(), eps)
    y = expect_tensor(out["y"], msg("{x} output", x="LayerNorm"), shape=exp.shape)
    _expect_dtype(y, x.dtype, "LayerNorm")
    hint = _layer_norm_hint(y, x, w, b, eps)
    if not hint and f["default_eps"]:
        hint = diagnose(
            y,
            [
                (
                    N_("the default eps should be 1e-5 (as nn.LayerNorm): __init__(self, d_model, eps=1e-5)"),
                    lambda e=e: ref_layer_norm(x, w, b, e),
                )
                for e in (1e-6, 1e-8, 1e-12, 0.0)
            ],
        )
    if not hint:
        hint = diagnose(
            y,
            [
                (
                    N_(
                        "the eps passed to __init__ is not used: store it (self.eps = eps) and use it in forward"
                    ),
                    lambda e=e: ref_layer_norm(x, w, b, e),
                )
                for e in (1e-5, 1e-6)
            ],
        )
    rtol, atol = _tol(x.dtype)
    assert_close(
        y,
        exp.to(y.dtype),
        msg("{x} output", x="LayerNorm"),
        hint
        or N_(
            "the same numbers as nn.LayerNorm with the same weight and bias are expected: normalise "
            "over the last dim with self.eps, then * self.weight + self.bias"
        ),
        rtol=rtol,
        atol=atol,
    )
    _same_input(out, f, ("x",), "LayerNorm")
