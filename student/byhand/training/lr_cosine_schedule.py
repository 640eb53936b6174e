"""lr_cosine_schedule: the helper `schedule` (the answer's learning rates at the given steps), the
contract's formula as the reference with its classic mistakes, their hints, its cases and its judge."""

from __future__ import annotations

import math

import torch

from .._core import Case, call, got_expected, graded, helper, hint_line
from .._judge import CheckFailure, diagnose, expect_float
from ..i18n import N_, msg
from ._shared import F64

# ---------------------------------------------------------------------------------------------
# lr_cosine_schedule


def schedule(fn, ts, lr_max, lr_min, warmup_iters, cosine_iters):
    """The schedule at each step of `ts`, as the answer returned it (the judge checks it is a float)."""
    out = [fn(t, lr_max, lr_min, warmup_iters, cosine_iters) for t in ts]
    return [x.detach() if isinstance(x, torch.Tensor) else x for x in out]


def ref_schedule(t, lr_max, lr_min, w, c, mistake=None):
    if mistake == "warm_plus_one" and t < w:
        return (t + 1) * lr_max / w
    if mistake == "warm_minus_one" and t < w:
        return t * lr_max / (w - 1) if w > 1 else lr_max
    if mistake == "warm_le" and t <= w:
        return t * lr_max / w
    if t < w:
        return t * lr_max / w
    if t <= c or mistake == "no_floor":
        phase = (t - w) / (c - w)
        if mistake == "phase_plus_one":
            phase = (t - w + 1) / (c - w)
        elif mistake == "no_shift":
            phase = t / c
        low = 0.0 if mistake == "to_zero" else lr_min
        return low + (1 + math.cos(math.pi * phase)) * (lr_max - low) / 2
    return lr_min


_SCHED_HINTS = {
    "warm_plus_one": N_(
        "the warm-up is one step ahead: at step t < warmup_iters the rate is t * lr_max / warmup_iters "
        "(0 at t = 0, lr_max reached at t = warmup_iters), not (t + 1) * lr_max / warmup_iters"
    ),
    "warm_minus_one": N_(
        "the warm-up divides by warmup_iters - 1: the rate is t * lr_max / warmup_iters, reaching lr_max "
        "at t = warmup_iters, where the cosine starts"
    ),
    "phase_plus_one": N_(
        "the cosine is one step ahead at the warm-up boundary: its phase is (t - warmup_iters) / "
        "(cosine_iters - warmup_iters), 0 at t = warmup_iters (the rate is lr_max there)"
    ),
    "no_shift": N_(
        "the cosine does not start at the end of the warm-up: its phase is (t - warmup_iters) / "
        "(cosine_iters - warmup_iters), not t / cosine_iters"
    ),
    "to_zero": N_(
        "the cosine decays to 0, not to lr_min: lr_min + (1 + cos(pi * phase)) * (lr_max - lr_min) / 2"
    ),
    "no_floor": N_("after cosine_iters the rate should stay at lr_min, not follow the cosine back up"),
}


def _sched_cases(hidden):
    specs = [(1.0, 0.1, 7, 21), (3e-3, 3e-4, 10, 50), (0.5, 0.0, 1, 9)]
    if hidden:
        specs = [(6e-4, 6e-5, 100, 1000), (2.0, 0.5, 3, 4), (1e-2, 1e-3, 25, 60)]
    cases = []
    for lr_max, lr_min, w, c in specs:
        ts = list(range(0, c + 8))
        steps = [
            call("r", helper("training.schedule"), graded("lr_cosine_schedule"), ts, lr_max, lr_min, w, c)
        ]
        cases.append(
            Case(
                msg(
                    "{call} for t = 0..{last}",
                    call=f"lr_cosine_schedule(t, lr_max={lr_max}, lr_min={lr_min}, warmup_iters={w}, cosine_iters={c})",
                    last=c + 7,
                ),
                steps,
                ["r"],
                facts=dict(ts=ts, lr_max=lr_max, lr_min=lr_min, w=w, c=c),
                size=c,
            )
        )
    return cases


def _sched_judge(case, out):
    f = case.facts
    got = out["r"]
    if not isinstance(got, (tuple, list)) or len(got) != len(f["ts"]):
        raise CheckFailure(msg("the grader could not read the schedule's values (no results came back)"))
    for t, x in zip(f["ts"], got):  # the type first: the exercise returns a float
        expect_float(x, msg("lr_cosine_schedule at t = {t}", t=t))
    got = torch.tensor([float(x) for x in got], dtype=F64)
    args = (f["lr_max"], f["lr_min"], f["w"], f["c"])
    exp = torch.tensor([ref_schedule(t, *args) for t in f["ts"]], dtype=F64)
    hint = diagnose(
        got,
        [
            (h, lambda k=k: torch.tensor([ref_schedule(t, *args, k) for t in f["ts"]], dtype=F64))
            for k, h in _SCHED_HINTS.items()
        ],
        rtol=1e-9,
        atol=1e-12,
    )
    bad = (got - exp).abs() > 1e-9 * f["lr_max"] + 1e-7 * exp.abs()
    if bad.any():
        t = f["ts"][int(bad.nonzero()[0])]
        default = msg(
            "warm-up t * lr_max / warmup_iters for t < warmup_iters, then the cosine down to lr_min at "
            "cosine_iters, then lr_min"
        )
        raise CheckFailure(
            msg("lr_cosine_schedule is wrong at t = {t}.", t=t)
            + got_expected(f"{float(got[t]):.6g}", f"{float(exp[t]):.6g}")
            + hint_line(hint or default),
            hint=hint or None,
        )
