"""Lesson 02_layernorm, `RMSNorm` (the module): its cases and its judge."""

from __future__ import annotations

import torch

from .._core import gen, rand
from .._judge import assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import (
    _drawn,
    _expect_dtype,
    _module_case,
    _param_checks,
    _rms_hint,
    _same_input,
    _tol,
    ref_rms_norm,
)

# a forward that calls the student's rms_norm: the reference one when that fails its own check
EARLIER = ("rms_norm",)

# ---------------------------------------------------------------------------------------------
# RMSNorm (module)

_RMSM_VISIBLE = [
    ((2, 3, 5), None, False, 1.0, 2.0, torch.float32),
    ((3, 4, 6), 0.1, True, 0.5, 0.3, torch.float64),
    ((4, 5, 8), None, True, 0.0008, 0.0005, torch.float64),
]  # mean square near the default eps
_RMSM_HIDDEN = [
    ((5, 6, 7), 1e-3, True, -2.0, 0.1, torch.float32),
    ((7, 12), None, True, 3.0, 4.0, torch.float64),
]


def _rmsm_cases(hidden):
    specs = _RMSM_HIDDEN if hidden else _RMSM_VISIBLE
    cases = []
    for i, (shape, eps, with_state, mean, std, dt) in enumerate(specs):
        g = gen(3500 + 41 * i + (300 if hidden else 0))
        d = shape[-1]
        x = rand(*shape, dtype=dt, mean=mean, std=std, generator=g)
        weight = rand(d, dtype=dt, mean=1.5, std=0.5, generator=g) if with_state else torch.ones(d, dtype=dt)
        cases.append(
            _module_case(
                "RMSNorm",
                x,
                eps,
                {"weight": weight} if with_state else None,
                with_state,
                _drawn(mean, std),
                dict(weight=weight, eps=1e-6 if eps is None else eps),
            )
        )
    return cases


def _rmsm_judge(case, out):
    f = case.facts
    x, w, eps = f["x"], f["weight"], f["eps"]
    d = x.shape[-1]
    if f["fresh"]:
        _param_checks(out, "rn", d, x.dtype, "RMSNorm", names=("weight",))
    ref_mod = torch.nn.RMSNorm(d, eps=eps, dtype=torch.float64)
    with torch.no_grad():
        ref_mod.weight.copy_(w.double())
        exp = ref_mod(x.double())
    y = expect_tensor(out["y"], msg("{x} output", x="RMSNorm"), shape=exp.shape)
    _expect_dtype(y, x.dtype, "RMSNorm")
    hint = _rms_hint(y, x, w, eps, f["default_eps"])
    if not hint:
        hint = diagnose(
            y,
            [
                (
                    N_(
                        "the eps passed to __init__ is not used: store it (self.eps = eps) and use it in forward"
                    ),
                    lambda e=e: ref_rms_norm(x, w, e),
                )
                for e in (1e-6, 1e-5)
            ],
        )
    expected = N_("the same numbers as nn.RMSNorm(d_model, eps=eps) with the same weight are expected")
    assert_close(y, exp.to(y.dtype), msg("{x} output", x="RMSNorm"), hint or expected, *_tol(x.dtype))
    _same_input(out, f, ("x",), "RMSNorm")
