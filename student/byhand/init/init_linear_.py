"""Lesson 05_init, `init_linear_`: its cases, its tolerances and its judge."""

from __future__ import annotations

import math

import torch

from .. import _judge
from .._core import Case, Unsupported, call, got_expected, hint_line, new, ref, seed
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._shared import _candidates, ref_init_std

EARLIER = ("init_std",)  # the reference init_std when the student's fails its own check

STD_RTOL = 0.03  # over 500 seeds x 8 shapes below: largest |std/target - 1| 1.2%, |kurtosis| 0.08
KURTOSIS_ATOL = 0.3  # excess kurtosis: normal 0, uniform -1.2; its std is ~0.03 on 36,000 weights


# ---------------------------------------------------------------------------------------------
# init_linear_

# (scheme, in_features, out_features, dtype, seed): every layer non-square, >= 36,000 weights
_LIN_VISIBLE = [
    ("kaiming", 300, 120, torch.float32, 1),
    ("xavier", 300, 120, torch.float32, 2),
    ("kaiming", 120, 300, torch.float64, 3),
]
_LIN_HIDDEN = [
    ("xavier", 120, 300, torch.float64, 11),
    ("kaiming", 500, 96, torch.float32, 12),
    ("kaiming", 80, 700, torch.float32, 13),
    ("xavier", 640, 64, torch.float32, 14),
    ("kaiming", 300, 120, torch.float64, 15),
]


def _lin_cases(hidden):
    specs = _LIN_HIDDEN if hidden else _LIN_VISIBLE
    cases = []
    for scheme, fi, fo, dt, s in specs:
        steps = [
            seed(s),
            new("layer", "torch.nn.Linear", fi, fo, dtype=dt),
            call("ret", "init_linear_", ref("layer"), scheme),
        ]
        cases.append(
            Case(
                msg(
                    "init_linear_({layer}, {scheme}), torch.manual_seed({seed})",
                    layer=f"nn.Linear({fi}, {fo}) {dt}",
                    scheme=repr(scheme),
                    seed=str(s),
                ),
                steps,
                ["layer.weight", "layer.bias", "ret.weight"],
                facts=dict(scheme=scheme, fan_in=fi, fan_out=fo, dtype=dt),
                size=fi * fo,
            )
        )
    return cases


def _lin_judge(case, out):
    f = case.facts
    fi, fo, scheme, dt = f["fan_in"], f["fan_out"], f["scheme"], f["dtype"]
    w, b, ret_w = out["layer.weight"], out["layer.bias"], out["ret.weight"]
    if isinstance(ret_w, Unsupported):
        raise CheckFailure(
            msg(
                "init_linear_ should return the layer it was given (return layer), got "
                "something without a .weight (did you forget the return?)"
            )
        )
    _judge.expect_tensor(w, "layer.weight", shape=(fo, fi))
    if w.dtype != dt:
        raise CheckFailure(
            msg("layer.weight changed dtype.")
            + got_expected(str(w.dtype), str(dt))
            + hint_line(
                N_(
                    "fill the existing weight in place (e.g. nn.init.normal_ or "
                    "weight.normal_) instead of assigning a new tensor"
                )
            )
        )
    exp = ref_init_std(scheme, fi, fo)
    w64 = w.double()
    got_std = float(w64.std())
    if abs(got_std / exp - 1) > STD_RTOL:
        hint = ""
        for h, v in _candidates(scheme, fi, fo):
            if abs(got_std / v - 1) <= STD_RTOL:
                hint = h
                break
        if scheme == "kaiming" and abs(got_std / math.sqrt(2 / fo) - 1) <= STD_RTOL:
            hint = msg(
                "the std of your weights is sqrt(2 / {fo}) = sqrt(2 / fan_out): nn.Linear({fi}, {fo}).weight "
                "has shape (out_features, in_features) = ({fo}, {fi}), so fan_in = weight.shape[1] = {fi}, "
                "not weight.shape[0]. Kaiming's fan_in mode needs fan_in (not fan_out)",
                fo=str(fo),
                fi=str(fi),
            )
        elif abs(got_std / (1 / math.sqrt(3 * fi)) - 1) <= STD_RTOL:
            hint = N_(
                "layer.weight still has nn.Linear's default init (std 1/sqrt(3 fan_in)): fill the "
                "layer's own weight in place"
            )
        raise CheckFailure(
            msg("the std of layer.weight is not what it should be.")
            + got_expected(
                f"{got_std:.5g}",
                msg(
                    "{std} ({call}, within {tol})",
                    std=f"{exp:.5g}",
                    call=f"init_std({scheme!r}, fan_in={fi}, fan_out={fo})",
                    tol=f"{STD_RTOL:.0%}",
                ),
            )
            + hint_line(hint or N_("draw from N(0, init_std(...)**2) with the layer`s own fans"))
        )
    mean = float(w64.mean())
    if abs(mean) > 6 * exp / math.sqrt(w.numel()):
        raise CheckFailure(
            msg("the mean of layer.weight should be about 0.")
            + got_expected(
                f"{mean:.4g}", msg("0 (within {tol})", tol=f"{6 * exp / math.sqrt(w.numel()):.2g}")
            )
            + hint_line(N_("draw from N(0, std**2)"))
        )
    z = (w64 - w64.mean()) / w64.std()
    kurt = float(z.pow(4).mean()) - 3.0
    if abs(kurt) > KURTOSIS_ATOL:
        shape = N_("uniform") if abs(kurt + 1.2) < KURTOSIS_ATOL else N_("not normal")
        raise CheckFailure(
            msg("the weights have the right std but are not normally distributed.")
            + got_expected(
                msg("excess kurtosis {kurtosis} ({shape})", kurtosis=f"{kurt:.3f}", shape=shape),
                N_("0 (a normal distribution)"),
            )
            + hint_line(
                N_(
                    "use a normal draw (nn.init.normal_, weight.normal_), not a uniform "
                    "one (xavier_uniform_, kaiming_uniform_) or a truncated normal"
                )
            )
        )
    if isinstance(b, torch.Tensor) and not bool((b == 0).all()):
        raise CheckFailure(
            msg("layer.bias should be all zeros.")
            + got_expected(_judge._fmt(b), N_("zeros"))
            + hint_line("nn.init.zeros_(layer.bias)")  # code only: data, the same in every language
        )
    if not isinstance(b, torch.Tensor):
        raise CheckFailure(msg("layer.bias should stay a tensor of zeros, got {got}", got=repr(b)))
    if not isinstance(ret_w, torch.Tensor) or not torch.equal(ret_w, w):
        raise CheckFailure(
            msg(
                "init_linear_ should return the same layer it filled (return layer), but the "
                "returned layer's weight differs from layer.weight"
            )
        )
