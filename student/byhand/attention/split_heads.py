"""Lesson 01_attention, `split_heads`: its cases, its mistakes and its judge."""

from __future__ import annotations

from .. import _judge
from .._core import Case, call, gen, let, rand, ref
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import ref_split_heads, reference_split_heads

REFERENCE = reference_split_heads  # what replaces an answer that fails (byhand._depends)

# ---------------------------------------------------------------------------------------------
# split_heads, merge_heads


def _split_cases(hidden):
    specs = [(2, 3, 8, 2), (3, 5, 12, 4)] if not hidden else [(4, 7, 30, 5), (1, 9, 16, 8), (2, 6, 21, 3)]
    cases = []
    for b, seq, d, h in specs:
        x = rand(b, seq, d, generator=gen(b * 100 + seq * 10 + d), mean=1.0, std=2.0)
        cases.append(
            Case(
                msg("x {shape}, n_heads={n_heads}", shape=str(tuple(x.shape)), n_heads=str(h)),
                [let("x", x), call("s", "split_heads", ref("x"), h), call("m", "merge_heads", ref("s"))],
                ["s", "x"],
                facts=dict(x=x, h=h),
                size=x.numel(),
            )
        )
    return cases


def _split_judge(case, out):
    x, h = case.facts["x"], case.facts["h"]
    exp = ref_split_heads(x, h)
    s = expect_tensor(out["s"], "split_heads(x, n_heads)", shape=exp.shape)
    b, seq, d = x.shape
    hint = diagnose(
        s,
        [
            (
                N_(
                    "you reshaped (B, L, d) straight to (B, H, L, d_head): that mixes tokens "
                    "into heads. View as (B, L, H, d_head), then transpose(1, 2)"
                ),
                lambda: x.reshape(b, h, seq, d // h),
            ),
            (
                N_(
                    "head h should hold features h*d_head:(h+1)*d_head; yours interleaves them "
                    "(view as (B, L, H, d_head), not (B, L, d_head, H))"
                ),
                lambda: x.view(b, seq, d // h, h).permute(0, 3, 1, 2),
            ),
        ],
    )
    assert_close(s, exp, "split_heads", hint)
    if not _judge.close(out["x"], x):
        raise CheckFailure(msg("split_heads modified its input in place"))
