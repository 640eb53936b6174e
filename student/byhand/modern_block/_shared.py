"""What several of lesson 09_modern_block's exercises share: the float64 references of RoPE,
SwiGLU and grouped-query attention and the weights they are built from (the block's check runs
them inside its own), the comparison of an output and of a KV cache, and the common case builders."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .. import _core, _judge
from .._core import Case, call, got_expected, hint_line, let, rand, ref
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg

F64 = torch.float64
CACHED = 10**6  # cases with a KV cache are judged after those without


def _tol(dtype, expected):
    scale = max(1.0, float(expected.abs().max())) if expected.numel() else 1.0
    return (2e-4, 2e-4 * scale) if dtype != F64 else (1e-7, 1e-9 * scale)


def _compare(got, exp, dt, what, mistakes, generic):
    """Shape, dtype, NaN, then the numbers; the hint names the mistake the answer equals."""
    expect_tensor(got, what, shape=exp.shape)
    _judge.expect_dtype(got, dt, what)
    g = got.to(F64)
    if torch.isnan(g).any() and not torch.isnan(exp).any():
        hint = diagnose(g, mistakes) or msg(
            "a query whose keys are all masked gives NaN: {hint}", hint=generic
        )
        raise CheckFailure(msg("{what} contains NaN.", what=what) + hint_line(hint))
    rtol, atol = _tol(dt, exp)
    assert_close(g, exp, what, diagnose(g, mistakes) or generic, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------------
# apply_rope: a float64 reference with the classic mistakes as options


def rope_angles(positions, d, theta=10000.0, exponent="2i/d"):
    """(..., L, d/2) angles p * theta^(-2i/d) (or a classic mistake's exponent)."""
    i = torch.arange(d // 2, dtype=F64)
    power = {"2i/d": -2 * i / d, "i/d": -i / d, "positive": 2 * i / d}[exponent]
    return positions.to(F64)[..., None] * float(theta) ** power


def ref_rope(x, positions, theta=10000.0, layout="interleaved", exponent="2i/d", sign=1.0):
    """RoPE in float64. layout "interleaved" rotates the pairs (2i, 2i+1) (the contract); "half" the
    pairs (i, i + d/2) of the half-split codebases; sign -1 rotates the other way."""
    x = x.to(F64)
    d = x.shape[-1]
    ang = sign * rope_angles(positions, d, theta, exponent)
    cos, sin = ang.cos(), ang.sin()
    if layout == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]  # (..., L, d/2) each
        return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)  # -> (..., L, d)
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


PER_SEQUENCE = N_(
    "the positions here hold one row per sequence, shape (B, 1, L) or (B, L), broadcastable to x's (..., L): "
    "compute the angles as positions[..., None] * theta ** (-2i / d_head), (..., L, d_head/2), not with "
    "torch.outer or a flattened positions vector"
)


def _raised(kind, shape):
    """The hint of a case on which an answer raised a shape error: its per-sequence positions, or its
    leading dims (anything but the usual three)."""
    if kind == "batched":
        return (PER_SEQUENCE, _core.SHAPE_ERRORS)
    return _judge.leading_dims_hint(shape)


# ---------------------------------------------------------------------------------------------
# SwiGLU


def swiglu_state(d, d_ff, g, dtype, prefix=""):
    s = {
        "w1.weight": rand(d_ff, d, generator=g, mean=0.02, std=1.3 / math.sqrt(d)),
        "w3.weight": rand(d_ff, d, generator=g, mean=-0.02, std=1.1 / math.sqrt(d)),
        "w2.weight": rand(d, d_ff, generator=g, std=1.0 / math.sqrt(d_ff)),
    }
    return {prefix + k: v.to(dtype) for k, v in s.items()}


def ref_swiglu(s, x, gate="silu", swap=False, no_gate=False, outer=False, both=False):
    x = x.to(F64)
    a = F.linear(x, s["w1.weight"].to(F64))  # (..., d_ff)
    b = F.linear(x, s["w3.weight"].to(F64))
    if swap:
        a, b = b, a
    act = {"silu": F.silu, "sigmoid": torch.sigmoid, "relu": F.relu, "gelu": F.gelu}[gate]
    if no_gate:
        h = act(a)
    elif outer:
        h = act(a * b)
    elif both:
        h = act(a) * act(b)
    else:
        h = act(a) * b
    return F.linear(h, s["w2.weight"].to(F64))


# ---------------------------------------------------------------------------------------------
# GroupedQueryAttention


def gqa_state(d, h, hkv, g, dtype, prefix=""):
    dh = d // h
    s = {
        "w_q.weight": rand(d, d, generator=g, mean=0.01, std=1.6 / math.sqrt(d)),
        "w_k.weight": rand(hkv * dh, d, generator=g, mean=-0.01, std=1.6 / math.sqrt(d)),
        "w_v.weight": rand(hkv * dh, d, generator=g, std=1.0 / math.sqrt(d)),
        "w_o.weight": rand(d, d, generator=g, std=1.0 / math.sqrt(d)),
    }
    return {prefix + k: v.to(dtype) for k, v in s.items()}


def ref_gqa(
    s,
    x,
    h,
    hkv,
    theta=10000.0,
    positions=None,
    cache=None,
    rope="qk",
    offset=True,
    layout="interleaved",
    before_split=False,
    tiled=False,
    mask="causal",
    mask_offset=True,
    scale="head",
):
    """Grouped-query attention in float64 -> (y, (k, v)), k after RoPE, both (B, n_kv, T_total, d_head).

    rope: which of q, k, v are rotated ("qk" the contract; "", "q", "k", "qkv"); offset=False starts
    the default positions at 0 with a cache; before_split rotates the (B, T, heads * d_head) projections
    before the heads are split; tiled repeats the key/value heads as x.repeat (h % n_kv)."""
    x = x.to(F64)
    b, t, d = x.shape
    dh, n_rep = d // h, h // hkv
    t_past = 0 if cache is None else cache[0].shape[2]
    if positions is None:
        start = t_past if offset else 0
        positions = torch.arange(start, start + t)
    q = F.linear(x, s["w_q.weight"].to(F64))  # (B, T, d)
    k = F.linear(x, s["w_k.weight"].to(F64))  # (B, T, hkv * dh)
    v = F.linear(x, s["w_v.weight"].to(F64))

    def rot(z):
        return ref_rope(z, positions, theta, layout=layout)

    if before_split:
        q, k, v = (rot(z) if n in rope else z for n, z in zip("qkv", (q, k, v)))
    q = q.view(b, t, h, dh).transpose(1, 2)  # (B, T, H, dh) -> (B, H, T, dh)
    k = k.view(b, t, hkv, dh).transpose(1, 2)  # (B, hkv, T, dh)
    v = v.view(b, t, hkv, dh).transpose(1, 2)
    if not before_split:
        q, k, v = (rot(z) if n in rope else z for n, z in zip("qkv", (q, k, v)))
    if cache is not None:
        k = torch.cat([cache[0].to(F64), k], dim=2)  # (B, hkv, T_past + T, dh)
        v = torch.cat([cache[1].to(F64), v], dim=2)
    if tiled:
        kr, vr = k.repeat(1, n_rep, 1, 1), v.repeat(1, n_rep, 1, 1)
    else:
        kr, vr = k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)  # (B, H, Tk, dh)
    div = {"head": math.sqrt(dh), "model": math.sqrt(d)}[scale]
    scores = q @ kr.transpose(-2, -1) / div  # (B, H, T, dh) x (B, H, dh, Tk) -> (B, H, T, Tk)
    tk = kr.shape[2]
    qpos = torch.arange(t)[:, None] + (t_past if mask_offset else 0)
    kpos = torch.arange(tk)[None, :]
    if mask == "causal":
        scores = scores.masked_fill(kpos > qpos, -math.inf)
    y = torch.softmax(scores, dim=-1) @ vr  # (B, H, T, Tk) x (B, H, Tk, dh) -> (B, H, T, dh)
    y = y.transpose(1, 2).reshape(b, t, d)  # (B, H, T, dh) -> (B, T, d)
    return F.linear(y, s["w_o.weight"].to(F64)), (k, v)


def _module(code, dtype):
    """A case label's module: the call that builds it and its dtype, "SwiGLU(d_model=8, d_ff=24)
    (torch.float64)"."""
    return msg("{code} ({dtype})", code=code, dtype=str(dtype))


def _with_and_without_cache(build, head, x, when, cache_of, facts, cache_note="", cache_out=False) -> Case:
    """A case of a module that takes a KV cache (GroupedQueryAttention, LlamaBlock), built by the
    step `build`. `when` = (T_past, T_new, positions): with T_past == 0, the module runs on all of x
    (at `positions`, when given); else on the T_new tokens after the first T_past, with the cache of
    those (`cache_of(x[:, :T_past])`, the reference's)."""
    (t_past, t_new, pos), module, (b, t, d) = when, build["out"], x.shape
    if t_past == 0:
        steps = [build, let("x", x)]
        if pos is None:
            steps.append(call("out", ref(module), ref("x")))
        else:
            steps += [let("pos", pos), call("out", ref(module), ref("x"), positions=ref("pos"))]
        if pos is None:
            label = msg("{module}, x {shape}, no cache", module=head, shape=tuple(x.shape))
        else:
            label = msg(
                "{module}, x {shape}, no cache, positions={positions}",
                module=head,
                shape=tuple(x.shape),
                positions=f"{pos.tolist()}",
            )
        return Case(label, steps, ["out", "x"], facts=dict(facts, x=x, pos=pos), size=b * t * d)
    pk, pv = cache_of(x[:, :t_past])
    cache = (pk.to(x.dtype), pv.to(x.dtype))
    x_new = x[:, t_past : t_past + t_new]
    steps = [build, let("x_new", x_new), let("cache", cache)]
    steps.append(call("out", ref(module), ref("x_new"), kv_cache=ref("cache")))
    label = msg(
        "{module}, x {shape} (positions {first}..{last}) with kv_cache = (k, v) of the first T_past={t_past}, "
        "each {cache_shape}",
        module=head,
        shape=tuple(x_new.shape),
        first=t_past,
        last=t_past + t_new - 1,
        t_past=t_past,
        cache_shape=f"{tuple(pk.shape)}{cache_note}",
    )
    outputs = ["out", "cache"] if cache_out else ["out"]
    return Case(
        label, steps, outputs, facts=dict(facts, x=x_new, cache=cache, pos=None), size=CACHED + b * t * d
    )


def _pair(got, what):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailure(
            msg("{who} should return a pair (y, new_cache), got {got}", who=what, got=f"{got!r:.80}")
        )
    return got


def _check_cache(got, exp_k, exp_v, dt, what, unrotated_k=None):
    """new_cache = (k, v), each (B, n_kv_heads, T_past + T, d_head), k after RoPE."""
    b, hkv, tt, dh = exp_k.shape
    for name, g, e in _judge.cache_pair(got, exp_k, exp_v, what, limit=80):
        if what == "new_cache":  # "k of new_cache" in a translation
            part = msg("new_cache: {name}", name=name)
        else:
            part = msg("{what}: {name}", what=what, name=name)
        if tuple(g.shape) != tuple(e.shape):
            why = (
                N_(
                    "it holds n_heads heads: cache k and v before repeat_kv, with their n_kv_heads heads (that "
                    "is the memory GQA saves)"
                )
                if g.dim() == 4 and g.shape[0] == b and g.shape[2] == tt and g.shape[1] > hkv
                else N_(
                    "keep k and v as (B, n_kv_heads, T, d_head) and concatenate along the time axis, dim 2"
                )
            )
            raise CheckFailure(
                msg("{what} has the wrong shape.", what=part)
                + got_expected(tuple(g.shape), f"{tuple(e.shape)} = (B, n_kv_heads, T_past + T, d_head)")
                + hint_line(why)
            )
        _judge.expect_dtype(g, dt, part)
        rtol, atol = _tol(dt, e)
        hint = N_(
            "the cache holds k after RoPE and v, each (B, n_kv_heads, T, d_head), earlier positions first"
        )
        if name == "k" and unrotated_k is not None and _judge.close(g.to(F64), unrotated_k, rtol, atol):
            hint = N_(
                "your cache holds the keys before RoPE: rotate k first, then cache it (as Llama does), so a "
                "cached key is never rotated again"
            )
        assert_close(g.to(F64), e, part, hint, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------------
# The reference answers, as the answer cells define them: put in place of a student's answer that
# fails its own check while a later question's cases run (byhand._depends)


def reference_apply_rope(x, positions, theta=10000.0):
    return ref_rope(x, positions, theta).to(x.dtype)


def reference_repeat_kv(x, n_rep):
    return x.repeat_interleave(n_rep, dim=1)


class ReferenceSwiGLU(torch.nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = torch.nn.Linear(d_model, d_ff, bias=False)
        self.w3 = torch.nn.Linear(d_model, d_ff, bias=False)
        self.w2 = torch.nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class ReferenceGroupedQueryAttention(torch.nn.Module):
    """The contract's GroupedQueryAttention: `ref_gqa` on the module's own weights, in x's dtype."""

    def __init__(self, d_model, n_heads, n_kv_heads, theta=10000.0):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.theta = n_heads, n_kv_heads, theta
        d_kv = n_kv_heads * (d_model // n_heads)
        self.w_q = torch.nn.Linear(d_model, d_model, bias=False)
        self.w_k = torch.nn.Linear(d_model, d_kv, bias=False)
        self.w_v = torch.nn.Linear(d_model, d_kv, bias=False)
        self.w_o = torch.nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, positions=None, kv_cache=None):
        state = {f"{n}.weight": getattr(self, n).weight for n in ("w_q", "w_k", "w_v", "w_o")}
        y, (k, v) = ref_gqa(state, x, self.n_heads, self.n_kv_heads, self.theta, positions, kv_cache)
        return y.to(x.dtype), (k.to(x.dtype), v.to(x.dtype))
