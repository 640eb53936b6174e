"""Lesson 01_attention, `merge_heads`: its cases, its mistakes and its judge."""

from __future__ import annotations

from .._core import Case, call, gen, let, rand, ref
from .._judge import assert_close, diagnose, expect_tensor
from ..i18n import N_
from ._shared import ref_merge_heads, reference_merge_heads

REFERENCE = reference_merge_heads  # what replaces an answer that fails (byhand._depends)


def _merge_cases(hidden):
    specs = [(2, 2, 3, 4), (3, 4, 5, 3)] if not hidden else [(4, 5, 7, 6), (2, 3, 9, 7)]
    cases = []
    for b, h, seq, dh in specs:
        x = rand(b, h, seq, dh, generator=gen(b * 1000 + h * 100 + seq), mean=-1.0, std=0.5)
        cases.append(
            Case(
                f"x {tuple(x.shape)}",
                [let("x", x), call("m", "merge_heads", ref("x"))],
                ["m"],
                facts=dict(x=x),
                size=x.numel(),
            )
        )
    return cases


def _merge_judge(case, out):
    x = case.facts["x"]
    b, h, seq, dh = x.shape
    exp = ref_merge_heads(x)
    m = expect_tensor(out["m"], "merge_heads(x)", shape=exp.shape)
    hint = diagnose(
        m,
        [
            (
                N_(
                    "you reshaped (B, H, L, d_head) straight to (B, L, d_model): transpose(1, 2) "
                    "first, so merge_heads undoes split_heads"
                ),
                lambda: x.reshape(b, seq, h * dh),
            )
        ],
    )
    assert_close(m, exp, "merge_heads", hint)
