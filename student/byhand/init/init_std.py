"""Lesson 05_init, `init_std`: its cases and its judge."""

from __future__ import annotations

import math

from .._core import Case, call, got_expected, hint_line
from .._judge import CheckFailure, expect_float
from ..i18n import N_, msg
from ._shared import _candidates, ref_init_std, reference_init_std

REFERENCE = reference_init_std  # what replaces an answer that fails (byhand._depends)


# ---------------------------------------------------------------------------------------------
# init_std

_STD_VISIBLE = [("kaiming", 300, 120), ("xavier", 300, 120), ("kaiming", 64, 256), ("xavier", 50, 700)]
_STD_HIDDEN = [
    ("kaiming", 120, 300),
    ("kaiming", 1000, 7),
    ("xavier", 7, 1000),
    ("xavier", 512, 2048),
    ("kaiming", 3, 10),
]


def _std_cases(hidden):
    specs = _STD_HIDDEN if hidden else _STD_VISIBLE
    return [
        Case(
            f"init_std({scheme!r}, fan_in={fi}, fan_out={fo})",
            [call("s", "init_std", scheme, fi, fo)],
            ["s"],
            facts=dict(scheme=scheme, fan_in=fi, fan_out=fo),
            size=i,
        )
        for i, (scheme, fi, fo) in enumerate(specs)
    ]


def _std_judge(case, out):
    f = case.facts
    got = expect_float(out["s"], "init_std")
    exp = ref_init_std(f["scheme"], f["fan_in"], f["fan_out"])
    if math.isclose(got, exp, rel_tol=1e-6):
        return
    hint = next(
        (
            h
            for h, v in _candidates(f["scheme"], f["fan_in"], f["fan_out"])
            if math.isclose(got, v, rel_tol=1e-6)
        ),
        "",
    )
    formula = "sqrt(2 / fan_in)" if f["scheme"] == "kaiming" else "sqrt(2 / (fan_in + fan_out))"
    raise CheckFailure(
        msg("init_std is not what it should be.")
        + got_expected(f"{got:.6g}", f"{exp:.6g} = {formula}")
        + hint_line(hint or N_("check the formula in the lesson"))
    )
