"""Lesson 01_attention, `causal_mask`: its cases, its mistakes and its judge."""

from __future__ import annotations

import torch

from .._core import Case, call
from .._judge import assert_close, diagnose, expect_tensor
from ..i18n import N_
from ._shared import ref_causal_mask

# ---------------------------------------------------------------------------------------------
# causal_mask, padding_mask


def _causal_cases(hidden):
    ns = [1, 4, 7] if not hidden else [2, 13, 33]
    return [Case(f"seq_len={n}", [call("m", "causal_mask", n)], ["m"], facts=dict(n=n), size=n) for n in ns]


def _causal_judge(case, out):
    n = case.facts["n"]
    m = expect_tensor(out["m"], "causal_mask(seq_len)", shape=(n, n), dtype=torch.bool)
    exp = ref_causal_mask(n)
    hint = diagnose(
        m.float(),
        [
            (
                N_("True above the diagonal means 'may attend to the future': use torch.tril, not triu"),
                lambda: torch.triu(torch.ones(n, n)),
            ),
            (
                N_(
                    "True strictly above the diagonal is the inverse of the causal mask: token i may attend "
                    "to 0..i (torch.tril)"
                ),
                lambda: torch.triu(torch.ones(n, n), diagonal=1),
            ),
            (
                N_("the diagonal is missing: a token may attend to itself (tril with diagonal=0)"),
                lambda: torch.tril(torch.ones(n, n), diagonal=-1),
            ),
        ],
    )
    assert_close(m, exp, "causal_mask", hint)
