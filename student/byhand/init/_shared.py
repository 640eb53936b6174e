"""Lesson 05_init: what its exercises share: the reference std and the classic mistakes' stds."""

from __future__ import annotations

import math

from ..i18n import N_, msg


def ref_init_std(scheme: str, fan_in: int, fan_out: int) -> float:
    if scheme == "xavier":
        return math.sqrt(2.0 / (fan_in + fan_out))
    if scheme == "kaiming":
        return math.sqrt(2.0 / fan_in)
    raise ValueError(scheme)


def _candidates(scheme: str, fan_in: int, fan_out: int) -> list:
    """(hint, std) of the classic wrong answers, most specific first."""
    if scheme == "kaiming":
        return [
            (
                msg(
                    "your std is sqrt(2 / fan_out) = sqrt(2 / {fan_out}): Kaiming's default (fan_in mode) uses "
                    "fan_in = {fan_in}, the number of inputs each output sums over",
                    fan_out=str(fan_out),
                    fan_in=str(fan_in),
                ),
                math.sqrt(2 / fan_out),
            ),
            (
                N_(
                    "your std is sqrt(1 / fan_in): the ReLU gain is missing. ReLU zeroes half of the signal, so "
                    "Kaiming doubles the variance: std = sqrt(2 / fan_in)"
                ),
                math.sqrt(1 / fan_in),
            ),
            (
                N_(
                    "your std is 2 / sqrt(fan_in): the ReLU gain of 2 multiplies the variance, not the std: "
                    "std = sqrt(2 / fan_in)"
                ),
                2 / math.sqrt(fan_in),
            ),
            (N_("you returned the variance 2 / fan_in: the std is its square root"), 2 / fan_in),
            (
                N_("this is Xavier's sqrt(2 / (fan_in + fan_out)), not Kaiming's sqrt(2 / fan_in)"),
                math.sqrt(2 / (fan_in + fan_out)),
            ),
            (
                N_(
                    "this is the bound of Kaiming's *uniform* init, sqrt(6 / fan_in); the normal's std is "
                    "sqrt(2 / fan_in)"
                ),
                math.sqrt(6 / fan_in),
            ),
        ]
    return [
        (
            N_(
                "your std is sqrt(1 / fan_in) (LeCun): Xavier averages the two fans, sqrt(2 / (fan_in + fan_out))"
            ),
            math.sqrt(1 / fan_in),
        ),
        (
            N_("your std is sqrt(1 / fan_out): Xavier averages the two fans, sqrt(2 / (fan_in + fan_out))"),
            math.sqrt(1 / fan_out),
        ),
        (
            N_("you returned the variance 2 / (fan_in + fan_out): the std is its square root"),
            2 / (fan_in + fan_out),
        ),
        (
            N_("this is Kaiming's sqrt(2 / fan_in), not Xavier's sqrt(2 / (fan_in + fan_out))"),
            math.sqrt(2 / fan_in),
        ),
        (
            N_(
                "this is the bound of Xavier's *uniform* init, sqrt(6 / (fan_in + fan_out)); the normal's std "
                "is sqrt(2 / (fan_in + fan_out))"
            ),
            math.sqrt(6 / (fan_in + fan_out)),
        ),
    ]


def reference_init_std(scheme, fan_in, fan_out):
    """The reference answer: put in place of a student's init_std that fails its own check while
    init_linear_'s cases run (byhand._depends)."""
    return ref_init_std(scheme, fan_in, fan_out)
