"""The check of `GroupedQueryAttention` (lesson 09_modern_block): its catalogued mistakes, its
cases and its judge (the reference, `ref_gqa`, is in `_shared.py`: the block's runs it too)."""

from __future__ import annotations

import torch

from .._core import gen, new, rand
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._shared import (
    F64,
    ReferenceGroupedQueryAttention,
    _check_cache,
    _compare,
    _module,
    _pair,
    _with_and_without_cache,
    gqa_state,
    ref_gqa,
)

# the earlier answers its check runs: the reference of each when the student's fails its own check
EARLIER = ("apply_rope", "repeat_kv")
REFERENCE = ReferenceGroupedQueryAttention  # what replaces an answer that fails (byhand._depends)


def _gqa_mistakes(s, x, h, hkv, theta, positions=None, cache=None):
    def m(**kw):
        return lambda: ref_gqa(s, x, h, hkv, theta, positions, cache, **kw)[0]

    out = []
    if cache is not None and positions is None:
        out += [
            (
                N_(
                    "with a cache, your positions restart at 0: the new tokens sit at positions T_past .. "
                    "T_past + T - 1 (T_past = kv_cache[0].shape[2]); rotate q and k by those"
                ),
                m(offset=False),
            ),
            (
                N_(
                    "with a cache, the positions of your causal mask restart at 0: the new query t is at absolute "
                    "position T_past + t and may attend to keys 0 .. T_past + t"
                ),
                m(mask_offset=False),
            ),
            (
                N_(
                    "with a cache, both your RoPE positions and your causal mask restart at 0: the new tokens sit at "
                    "T_past .. T_past + T - 1"
                ),
                m(offset=False, mask_offset=False),
            ),
        ]
    if positions is not None:
        out.append(
            (
                N_(
                    "your forward ignores its positions argument: rotate q and k by the positions given, and use "
                    "T_past .. T_past + T - 1 only when positions is None"
                ),
                lambda: ref_gqa(s, x, h, hkv, theta, None, cache)[0],
            )
        )
    if theta != 10000.0:
        out.append(
            (
                N_(
                    "your attention ignores its theta argument (it rotates with the default 10000): keep it, "
                    "self.theta = theta, and pass it on, apply_rope(q, positions, self.theta)"
                ),
                lambda: ref_gqa(s, x, h, hkv, 10000.0, positions, cache)[0],
            )
        )
    out += [
        (N_("RoPE is missing: rotate q and k with apply_rope before the scores"), m(rope="")),
        (N_("the values are rotated too: RoPE rotates q and k only, v stays as w_v(x)"), m(rope="qkv")),
        (N_("only q is rotated: rotate k too, by the same positions"), m(rope="q")),
        (N_("only k is rotated: rotate q too, by the same positions"), m(rope="k")),
        (
            N_(
                "RoPE is applied before the head split, over all d_model (or n_kv * d_head) features: split the "
                "heads first, (B, T, d) -> (B, n_heads, T, d_head), then rotate each head's d_head features"
            ),
            m(before_split=True),
        ),
        (
            N_(
                "your rotation uses the half-split layout, pairs (i, i + d/2) (rotate_half): this lesson rotates "
                "the interleaved pairs (2i, 2i+1), x[..., 0::2] with x[..., 1::2]"
            ),
            m(layout="half"),
        ),
        (
            N_(
                "your key/value heads are tiled (repeat): query head h must use key/value head h // n_rep "
                "(repeat_kv, repeat_interleave on dim 1), not h % n_kv_heads"
            ),
            m(tiled=True),
        ),
        (
            N_(
                "your attention ignores the causal mask: the query at position t may attend only to keys 0..t "
                "(with a cache: 0..T_past + t)"
            ),
            m(mask="none"),
        ),
        (
            N_(
                "the scores are divided by sqrt(d_model): each head has d_head = d_model // n_heads features, "
                "divide by sqrt(d_head)"
            ),
            m(scale="model"),
        ),
    ]
    return out


def _gqa_specs(hidden):
    # (B, T, d_model, n_heads, n_kv_heads, dtype, T_past (0: no cache), T_new, positions kind, theta)
    if not hidden:
        return [
            (2, 5, 24, 4, 2, torch.float32, 0, 0, None, 10000.0),
            (3, 6, 16, 4, 1, torch.float64, 0, 0, None, 10000.0),
            (1, 6, 20, 2, 2, torch.float32, 0, 0, None, 10000.0),  # n_kv_heads = n_heads: MHA
            (2, 6, 24, 4, 2, torch.float64, 0, 0, None, 500.0),
            (2, 7, 16, 2, 1, torch.float64, 0, 0, "strided", 10000.0),
            (2, 7, 24, 6, 2, torch.float32, 6, 1, None, 10000.0),
            (3, 9, 16, 4, 2, torch.float64, 5, 4, None, 10000.0),
        ]
    return [
        (4, 8, 32, 8, 2, torch.float64, 0, 0, None, 500.0),
        (2, 5, 24, 3, 3, torch.float64, 0, 0, None, 10000.0),
        (2, 12, 36, 6, 3, torch.float32, 10, 2, None, 10000.0),
        (2, 11, 32, 4, 1, torch.float64, 7, 4, None, 500.0),
        (3, 5, 24, 3, 1, torch.float64, 0, 0, "random", 10000.0),
    ]


def _gqa_cases(hidden):
    cases = []
    for i, (b, t, d, h, hkv, dt, t_past, t_new, pkind, theta) in enumerate(_gqa_specs(hidden)):
        g = gen(9300 + 29 * i + 3 * d + (900 if hidden else 0))
        s = gqa_state(d, h, hkv, g, dt)
        x = rand(b, t, d, dtype=dt, mean=0.3, std=2.0, generator=g)
        args = (d, h, hkv) if theta == 10000.0 else (d, h, hkv, theta)
        head = _module(
            f"GroupedQueryAttention(d_model={d}, n_heads={h}, n_kv_heads={hkv}, theta={theta:g})", dt
        )
        pos = None
        if t_past == 0 and pkind == "strided":
            pos = torch.arange(t) * 3 + 2
        elif t_past == 0 and pkind == "random":
            pos = torch.randint(0, 500, (t,), generator=g).sort().values
        cases.append(
            _with_and_without_cache(
                new("attn", "GroupedQueryAttention", *args, state=s, dtype=dt),
                head,
                x,
                (t_past, t_new, pos),
                lambda x_past, s=s, h=h, hkv=hkv, theta=theta: ref_gqa(s, x_past, h, hkv, theta)[1],
                dict(s=s, h=h, hkv=hkv, dt=dt, theta=theta),
                cache_note=" = (B, n_kv_heads, T_past, d_head)",
                cache_out=True,
            )
        )
    return cases


GQA_GENERIC = N_(
    "q = w_q(x), k = w_k(x), v = w_v(x) split into heads (n_heads for q, n_kv_heads for k and v); rotate q and k "
    "with apply_rope at positions T_past .. T_past + T - 1; append the cache; repeat_kv; causal softmax of "
    "q k^T / sqrt(d_head); merge the heads; w_o"
)


def _gqa_judge(case, out):
    f = case.facts
    s, x, h, hkv, dt, theta, pos = f["s"], f["x"], f["h"], f["hkv"], f["dt"], f["theta"], f["pos"]
    cache = f.get("cache")
    y, new_cache = _pair(out["out"], "GroupedQueryAttention")
    exp, (ek, ev) = ref_gqa(s, x, h, hkv, theta, pos, cache)
    if cache is not None:
        what = msg("{name} output {y} with a cache", name="GroupedQueryAttention", y="y")
    else:
        what = msg("{name} output {y}", name="GroupedQueryAttention", y="y")
    _compare(y, exp, dt, what, _gqa_mistakes(s, x, h, hkv, theta, pos, cache), GQA_GENERIC)
    _, (uk, _) = ref_gqa(s, x, h, hkv, theta, pos, None, rope="q")
    if cache is not None:
        uk = torch.cat([cache[0].to(F64), uk], dim=2)
    _check_cache(new_cache, ek, ev, dt, "new_cache", unrotated_k=uk)
    if cache is None:
        if not torch.equal(out["x"], x):
            raise CheckFailure(
                msg("{who} modified its input {name} in place", who="GroupedQueryAttention", name="x")
            )
    else:
        for name, given, sent in zip("kv", out["cache"], cache):
            if not torch.equal(given, sent):
                raise CheckFailure(
                    msg(
                        "{who} modified the given cache's {name} in place",
                        who="GroupedQueryAttention",
                        name=name,
                    )
                )
