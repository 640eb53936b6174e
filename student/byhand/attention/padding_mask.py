"""Lesson 01_attention, `padding_mask`: its cases, its mistakes and its judge."""

from __future__ import annotations

import torch

from .._core import Case, call, let, ref
from .._judge import assert_close, diagnose, expect_tensor
from ..i18n import N_, msg


def _padding_cases(hidden):
    specs = [([3, 1, 4], 5), ([2, 2], 2)] if not hidden else [([7, 1, 5, 9, 3], 9), ([4], 6)]
    cases = []
    for lengths, max_len in specs:
        lt = torch.tensor(lengths, dtype=torch.long)
        cases.append(
            Case(
                msg("lengths={lengths}, max_len={max_len}", lengths=str(lengths), max_len=str(max_len)),
                [let("lengths", lt), call("m", "padding_mask", ref("lengths"), max_len)],
                ["m", "lengths"],
                facts=dict(lengths=lt, max_len=max_len),
                size=len(lengths) * max_len,
            )
        )
    return cases


def _padding_judge(case, out):
    lengths, max_len = case.facts["lengths"], case.facts["max_len"]
    exp = torch.arange(max_len)[None, :] < lengths[:, None]
    m = expect_tensor(out["m"], "padding_mask(lengths, max_len)", shape=exp.shape, dtype=torch.bool)
    hint = diagnose(
        m.float(),
        [
            (
                N_("the polarity is inverted: True marks real tokens (position < length)"),
                lambda: (~exp).float(),
            ),
            (
                N_("off by one: position p is real when p < length (not <=)"),
                lambda: (torch.arange(max_len)[None, :] <= lengths[:, None]).float(),
            ),
        ],
    )
    assert_close(m, exp, "padding_mask", hint)
