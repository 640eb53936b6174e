"""The check of `CausalSelfAttention` (lesson 07_decoder): its cases, its catalogued mistakes and
its judge (the reference, `ref_attention`, is in `_shared.py`: the GPT's runs it too)."""

from __future__ import annotations

import torch

from .. import _judge
from .._core import Case, call, gen, hint_line, let, new, rand, ref
from .._judge import CheckFailure, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import (
    CACHED,
    F64,
    ReferenceCausalSelfAttention,
    _check_cache,
    _compare_y,
    _pair,
    _tol,
    attn_state,
    ref_attention,
)

REFERENCE = ReferenceCausalSelfAttention  # what replaces an answer that fails (byhand._depends)


def _attn_mistakes(s, x, h, cache=None):
    m = [
        (
            N_(
                "your attention ignores the causal mask: the query at position t may attend only to keys "
                "0..t (with a cache: 0..T_past + t)"
            ),
            lambda: ref_attention(s, x, h, cache, mask="none")[0],
        ),
        (
            N_(
                "the causal mask is inverted: each query attends to the future (keys t..T-1), not to the past "
                "(keys 0..t). True on and below the diagonal means 'may attend'"
            ),
            lambda: ref_attention(s, x, h, cache, mask="inverted")[0],
        ),
        (
            N_("the scores are not scaled: divide q @ k^T by sqrt(d_head)"),
            lambda: ref_attention(s, x, h, cache, scale="none")[0],
        ),
        (
            N_(
                "the scores are divided by sqrt(d_model): each head has d_head = d_model // n_heads features, "
                "divide by sqrt(d_head)"
            ),
            lambda: ref_attention(s, x, h, cache, scale="model")[0],
        ),
        (
            N_(
                "q, k and v are read from the wrong parts of qkv(x): it stacks q, k, v in that order "
                "(qkv(x).split(d_model, dim=-1))"
            ),
            lambda: ref_attention(s, x, h, cache, order="kqv")[0],
        ),
        (
            N_(
                "q, k and v are read from the wrong parts of qkv(x): it stacks q, k, v in that order "
                "(qkv(x).split(d_model, dim=-1))"
            ),
            lambda: ref_attention(s, x, h, cache, order="vkq")[0],
        ),
        (
            N_(
                "the heads are split by a view without the transpose: (B, T, d) -> (B, T, H, d_head) "
                "-> transpose(1, 2) -> (B, H, T, d_head)"
            ),
            lambda: ref_attention(s, x, h, cache, no_transpose=True)[0],
        ),
        (
            N_(
                "the heads are merged by a reshape without the transpose: (B, H, T, d_head).reshape(B, T, d) "
                "mixes positions and heads, so position t gets other positions' outputs. Transpose back "
                "first: y.transpose(1, 2).reshape(B, T, d_model)"
            ),
            lambda: ref_attention(s, x, h, cache, merge_no_transpose=True)[0],
        ),
        (
            N_(
                "the softmax runs over the queries (dim=-2): each key's column sums to 1, so an output "
                "depends on the later queries. Normalize each query's row over the keys: softmax(dim=-1)"
            ),
            lambda: ref_attention(s, x, h, cache, softmax_dim=-2)[0],
        ),
        (
            N_(
                "your mask also hides the diagonal (keys j < t): the query at t may attend to its own key, "
                "keys 0..t (mask[t, j] = j <= t; torch.tril keeps the diagonal)"
            ),
            lambda: ref_attention(s, x, h, cache, mask="strict")[0],
        ),
    ]
    if cache is not None:
        m = [
            (
                N_(
                    "with a cache, the positions of your causal mask restart at 0: the new query t is at "
                    "absolute position T_past + t and may attend to keys 0..T_past + t (mask[t, j] = "
                    "j <= T_past + t)"
                ),
                lambda: ref_attention(s, x, h, cache, offset=False)[0],
            ),
            (
                N_(
                    "the cache is concatenated in the wrong order: the cached (earlier) keys and values come "
                    "first, then the new ones: torch.cat([past_k, k], dim=2)"
                ),
                lambda: ref_attention(s, x, h, cache, new_first=True)[0],
            ),
        ] + m
    return m


def _attn_specs(hidden):
    # (B, T, d_model, n_heads, dtype, T_past of the cached run (0: no cache), T_new)
    if not hidden:
        return [
            (2, 5, 12, 3, torch.float32, 0, 0),
            (3, 4, 8, 2, torch.float64, 0, 0),
            (2, 7, 12, 3, torch.float32, 6, 1),
            (3, 9, 8, 2, torch.float64, 5, 4),
        ]
    return [
        (4, 10, 24, 4, torch.float64, 0, 0),
        (1, 6, 20, 5, torch.float32, 0, 0),
        (2, 11, 16, 4, torch.float32, 10, 1),
        (3, 12, 30, 6, torch.float64, 7, 5),
        (1, 8, 16, 1, torch.float32, 4, 4),
    ]


def _attn_cases(hidden):
    cases = []
    for i, (b, t, d, h, dt, t_past, t_new) in enumerate(_attn_specs(hidden)):
        g = gen(7100 + 31 * i + 7 * d + (900 if hidden else 0))
        s = attn_state(d, g, dt)
        x = rand(b, t, d, dtype=dt, mean=0.3, std=2.0, generator=g)
        module = f"CausalSelfAttention(d_model={d}, n_heads={h})"
        if t_past == 0:
            x_pert = x.clone()
            x_pert[:, -1] = rand(b, d, dtype=dt, mean=-1.0, std=3.0, generator=g)  # a different last token
            steps = [
                new("attn", "CausalSelfAttention", d, h, state=s, dtype=dt),
                let("x", x),
                let("x_pert", x_pert),
                call("full", ref("attn"), ref("x")),
                call("pert", ref("attn"), ref("x_pert")),
            ]
            cases.append(
                Case(
                    msg(
                        "{module} ({dtype}), x {shape}, no cache",
                        module=module,
                        dtype=dt,
                        shape=tuple(x.shape),
                    ),
                    steps,
                    ["full", "pert", "x"],
                    facts=dict(s=s, x=x, x_pert=x_pert, h=h, dt=dt),
                    size=b * t * d,
                )
            )
        else:
            _, (pk, pv) = ref_attention(s, x[:, :t_past], h)
            cache = (pk.to(dt), pv.to(dt))
            x_new = x[:, t_past : t_past + t_new]
            steps = [
                new("attn", "CausalSelfAttention", d, h, state=s, dtype=dt),
                let("x_new", x_new),
                let("cache", cache),
                call("inc", ref("attn"), ref("x_new"), kv_cache=ref("cache")),
            ]
            cases.append(
                Case(
                    msg(
                        "{module} ({dtype}), x {shape} (the next {n} positions) with kv_cache = (k, v) of the "
                        "first T_past={t_past}, each {cache_shape} = (B, n_heads, T_past, d_head): the time "
                        "axis is dim 2",
                        module=module,
                        dtype=dt,
                        shape=tuple(x_new.shape),
                        n=t_new,
                        t_past=t_past,
                        cache_shape=tuple(pk.shape),
                    ),
                    steps,
                    ["inc", "cache"],
                    facts=dict(s=s, x_new=x_new, cache=cache, h=h, dt=dt),
                    size=CACHED + b * t * d,
                )
            )
    return cases


ATTN_GENERIC = N_(
    "compare step by step: q, k, v = qkv(x).split(d_model, -1), heads (B, n_heads, T, d_head), "
    "scores / sqrt(d_head), causal mask, softmax over the keys, merge the heads, proj"
)
ATTN_GENERIC_CACHE = N_(
    "compare step by step: q, k, v = qkv(x).split(d_model, -1), heads (B, n_heads, T, d_head), "
    "scores / sqrt(d_head), causal mask, softmax over the keys, merge the heads, proj; with a cache, "
    "concatenate the past k, v before the new ones along dim 2"
)


def _attn_judge(case, out):
    f = case.facts
    s, h, dt = f["s"], f["h"], f["dt"]
    if "x" in f:
        x = f["x"]
        y, cache = _pair(out["full"], "CausalSelfAttention(x)")
        y_pert, _ = _pair(out["pert"], "CausalSelfAttention(x)")
        exp, (ek, ev) = ref_attention(s, x, h)
        what = msg("{module} output {name}", module="CausalSelfAttention", name="y")
        expect_tensor(y, what, shape=exp.shape)
        expect_tensor(y_pert, what, shape=exp.shape)
        if not torch.isnan(y).any() and not _judge.close(y_pert[:, :-1], y[:, :-1], *_tol(dt)):
            raise CheckFailure(
                msg(
                    "changing only the last token changed your outputs at earlier positions: they look at "
                    "the future."
                )
                + hint_line(
                    diagnose(y.to(F64), _attn_mistakes(s, x, h))
                    or N_(
                        "an output at position t must depend on tokens 0..t only: check the causal mask "
                        "(keys 0..t), the softmax's dim (over the keys, dim=-1) and that the heads are split "
                        "and merged with transpose(1, 2)"
                    )
                )
            )
        _compare_y(y, exp, dt, what, _attn_mistakes(s, x, h), ATTN_GENERIC)
        _check_cache(cache, ek, ev, dt, N_("new_cache (no cache given)"))
        if not _judge.close(out["x"], x):
            raise CheckFailure(
                msg("{who} modified its input {name} in place", who="CausalSelfAttention", name="x")
            )
    else:
        x_new, past = f["x_new"], f["cache"]
        y, cache = _pair(out["inc"], "CausalSelfAttention(x, kv_cache)")
        exp, (ek, ev) = ref_attention(s, x_new, h, past)
        _compare_y(
            y,
            exp,
            dt,
            msg("{module} output {name} with a cache", module="CausalSelfAttention", name="y"),
            _attn_mistakes(s, x_new, h, past),
            ATTN_GENERIC_CACHE,
        )
        _check_cache(cache, ek, ev, dt, "new_cache")
        for name, given, sent in zip("kv", out["cache"], past):
            if not _judge.close(given, sent):
                raise CheckFailure(
                    msg(
                        "{who} modified the given cache's {name} in place",
                        who="CausalSelfAttention",
                        name=name,
                    )
                )
