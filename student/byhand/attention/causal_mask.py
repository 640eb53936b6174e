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
    # seq_len=1 judged last (the smallest case goes first): there every mask with the diagonal wrong is
    # [[False]], so it shows no mistake apart
    return [
        Case(
            f"seq_len={n}", [call("m", "causal_mask", n)], ["m"], facts=dict(n=n), size=n if n > 1 else 10**3
        )
        for n in ns
    ]


def _causal_judge(case, out):
    n = case.facts["n"]
    m = expect_tensor(out["m"], "causal_mask(seq_len)", shape=(n, n), dtype=torch.bool)
    exp = ref_causal_mask(n)
    mistakes = [
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
    ]
    # a mistake is named only where its mask is its own on this case (on seq_len=1 the last two coincide)
    masks = [compute() for _, compute in mistakes]
    apart = [
        (hint, compute)
        for i, (hint, compute) in enumerate(mistakes)
        if not any(torch.equal(masks[i], other) for j, other in enumerate(masks) if j != i)
    ]
    assert_close(m, exp, "causal_mask", diagnose(m.float(), apart))
