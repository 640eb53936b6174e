"""The check of `repeat_kv` (lesson 09_modern_block): its cases and its judge."""

from __future__ import annotations

import torch

from .. import _judge
from .._core import Case, call, gen, got_expected, hint_line, let, rand, ref
from .._judge import CheckFailure, assert_close, expect_tensor
from ..i18n import N_, msg
from ._shared import reference_repeat_kv

REFERENCE = reference_repeat_kv  # what replaces an answer that fails (byhand._depends)

# ---------------------------------------------------------------------------------------------
# repeat_kv


def _repeat_specs(hidden):
    # (B, n_kv_heads, L, d_head, n_rep, dtype)
    if not hidden:
        return [
            (2, 3, 5, 4, 2, torch.float32),
            (1, 2, 7, 6, 3, torch.float64),
            (3, 1, 4, 8, 4, torch.float32),
            (2, 3, 6, 4, 1, torch.float32),
        ]
    return [
        (2, 4, 3, 5, 2, torch.float64),
        (1, 2, 5, 3, 3, torch.float32),
        (2, 1, 3, 4, 4, torch.float64),
        (2, 2, 4, 6, 1, torch.float64),
    ]


def _repeat_cases(hidden):
    cases = []
    for i, (b, hkv, L, dh, n_rep, dt) in enumerate(_repeat_specs(hidden)):
        g = gen(9200 + 7 * i + (900 if hidden else 0))
        x = rand(b, hkv, L, dh, dtype=dt, mean=0.5, std=1.5, generator=g)
        cases.append(
            Case(
                msg(
                    "x {shape} = (B, n_kv_heads, L, d_head) {dtype}, n_rep={n_rep}",
                    shape=tuple(x.shape),
                    dtype=dt,
                    n_rep=n_rep,
                ),
                [let("x", x), call("out", "repeat_kv", ref("x"), n_rep)],
                ["out", "x"],
                facts=dict(x=x, n_rep=n_rep, dt=dt),
                size=x.numel() * n_rep,
            )
        )
    return cases


def _repeat_judge(case, out):
    x, n_rep, dt = case.facts["x"], case.facts["n_rep"], case.facts["dt"]
    b, hkv, L, dh = x.shape
    exp = x.repeat_interleave(n_rep, dim=1)  # query head h reads key/value head h // n_rep
    what = msg("{name} output", name="repeat_kv")
    got = expect_tensor(out["out"], what)
    if tuple(got.shape) != tuple(exp.shape):
        layouts = {
            (b, hkv, L * n_rep, dh): N_("repeated along the time axis (dim 2): repeat the heads, dim 1"),
            (b * n_rep, hkv, L, dh): N_("repeated along the batch axis (dim 0): repeat the heads, dim 1"),
            (b, hkv, n_rep, L, dh): N_(
                "the repeats are a separate axis: reshape (B, n_kv, n_rep, L, d) to (B, n_kv * n_rep, L, d)"
            ),
        }
        raise CheckFailure(
            msg("{what} has the wrong shape.", what=what)
            + got_expected(tuple(got.shape), f"{tuple(exp.shape)} = (B, n_kv_heads * n_rep, L, d_head)")
            + hint_line(
                layouts.get(tuple(got.shape), N_("each key/value head becomes n_rep heads along dim 1"))
            )
        )
    _judge.expect_dtype(got, dt, what)
    tiled = x.repeat(1, n_rep, 1, 1)
    hint = (
        N_(
            "your heads are tiled (x.repeat(1, n_rep, 1, 1)): query head h then reads key/value head h % n_kv_heads. "
            "Each key/value head must serve n_rep neighbouring query heads, h // n_rep: x.repeat_interleave(n_rep, "
            "dim=1), or x[:, :, None].expand(B, n_kv, n_rep, L, d).reshape(B, n_kv * n_rep, L, d)"
        )
        if torch.equal(got, tiled)
        else N_("query head h uses key/value head h // n_rep: x.repeat_interleave(n_rep, dim=1)")
    )
    assert_close(got, exp, what, hint)
    if not torch.equal(out["x"], x):
        raise CheckFailure(msg("{who} modified its input {name} in place", who="repeat_kv", name="x"))
