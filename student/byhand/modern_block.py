"""Checks for lesson 09_modern_block: the block inside Llama-style models (RoPE, SwiGLU, grouped-query
attention, the pre-RMSNorm block).

The references are float64 functions in this module, run in the judge's process with the inputs and
weights the case sent to the student's code. The classic mistakes are recomputed by the same
references with one thing changed (the half-split layout, the exponent i/d instead of 2i/d, positions
that ignore the cache, values rotated, RoPE before the head split, key/value heads tiled instead of
repeated, a Post-norm or parallel block, ...), so a hint names the one the answer equals. The graded
names and their behaviour are documented in docs/api/09_modern_block.md.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import _core, _judge
from ._core import Case, Question, call, gen, got_expected, hint_line, let, new, rand, ref
from ._judge import CheckFailure, assert_close, diagnose, expect_tensor
from .i18n import N_, msg

LESSON = "09_modern_block"
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


def _rope_mistakes(x, pos, theta):
    L = x.shape[-2]
    out = [
        (
            N_(
                "your rotation uses the half-split layout, pairs (i, i + d/2) (rotate_half): this lesson rotates "
                "the interleaved pairs (2i, 2i+1), x[..., 0::2] with x[..., 1::2]"
            ),
            lambda: ref_rope(x, pos, theta, layout="half"),
        ),
        (
            N_(
                "the exponent is -i/d instead of -2i/d: the frequency of pair i is theta ** (-2i / d_head), "
                "i = 0 .. d_head/2 - 1 (torch.arange(0, d, 2) / d)"
            ),
            lambda: ref_rope(x, pos, theta, exponent="i/d"),
        ),
        (
            N_(
                "the exponent has the wrong sign: the frequencies theta ** (-2i / d_head) fall from 1 to about "
                "1/theta; yours grow"
            ),
            lambda: ref_rope(x, pos, theta, exponent="positive"),
        ),
        (
            N_("your rotation turns the wrong way: (a, b) -> (a cos - b sin, a sin + b cos)"),
            lambda: ref_rope(x, pos, theta, sign=-1.0),
        ),
    ]
    # a mistake is named only where its output differs from the right one: positions 0 .. L-1 and
    # theta 10000 give the right rotation, so an answer slightly off there (float32 angles) is not
    # "ignoring" them
    if not torch.equal(
        torch.as_tensor(pos).to(torch.arange(L).dtype).broadcast_to(x.shape[:-1]),
        torch.arange(L).expand(x.shape[:-1]),
    ):
        out.append(
            (
                N_(
                    "your apply_rope ignores its positions argument (it uses 0 .. L-1): rotate by the positions given"
                ),
                lambda: ref_rope(x, torch.arange(L), theta),
            )
        )
    if theta != 10000.0:
        out.append(
            (
                N_(
                    "your apply_rope ignores theta (it uses 10000): the frequencies are theta ** (-2i / d_head)"
                ),
                lambda: ref_rope(x, pos, 10000.0),
            )
        )
    return out


def _rope_specs(hidden):
    # (x shape, positions kind, theta, dtype); "batched": one row of positions per sequence, (B, 1, L)
    # for x (B, H, L, d) or (B, L) for x (B, L, d); "long": positions around 1e5, where angles computed
    # in float32 are off by about 1e-2. The hidden cases repeat each kind with other data and sizes.
    if not hidden:
        return [
            ((3, 7, 8), "arange", 10000.0, torch.float32),
            ((2, 3, 5, 12), "offset", 10000.0, torch.float64),
            ((4, 6, 16), "random", 500.0, torch.float32),
            ((9, 10), "random", 100.0, torch.float64),
            ((2, 4, 11, 6), "batched", 10000.0, torch.float32),
            ((3, 5, 8), "batched", 100.0, torch.float64),
            ((2, 5, 16), "long", 500000.0, torch.float32),
            ((1, 2, 2, 3, 8), "random", 10000.0, torch.float64),
        ]
    return [
        ((9, 10), "arange", 10000.0, torch.float64),
        ((2, 4, 11, 6), "batched", 10000.0, torch.float32),
        ((4, 7, 6), "batched", 500.0, torch.float64),
        ((3, 5, 32), "random", 500000.0, torch.float64),
        ((2, 6, 2), "offset", 100.0, torch.float32),
        ((1, 2, 3, 4, 14), "random", 10000.0, torch.float64),
        ((3, 2, 6, 12), "long", 500000.0, torch.float32),
        ((2, 7, 10), "long", 10000.0, torch.float64),
    ]


PER_SEQUENCE = N_(
    "the positions here hold one row per sequence, shape (B, 1, L) or (B, L), broadcastable to x's (..., L): "
    "compute the angles as positions[..., None] * theta ** (-2i / d_head), (..., L, d_head/2), not with "
    "torch.outer or a flattened positions vector"
)
FLOAT32_ANGLES = N_(
    "your angles lose precision at large positions (around 1e5 they are off by about 1e-2): compute positions * "
    "theta ** (-2i / d_head) and their cos and sin in float64 (positions.to(torch.float64)), then cast cos and "
    "sin to x.dtype"
)


def _raised(kind, shape):
    """The hint of a case on which an answer raised a shape error: its per-sequence positions, or its
    leading dims (anything but the usual three)."""
    if kind == "batched":
        return (PER_SEQUENCE, _core.SHAPE_ERRORS)
    return _judge.leading_dims_hint(shape)


def _positions_label(pos, kind):
    """The positions of a RoPE case, for its label: their shape, how they were drawn, the first few."""
    shape, first = tuple(pos.shape), f"{pos.reshape(-1)[:4].tolist()}"
    if kind == "arange":
        return msg("positions {shape} (arange)", shape=shape)
    if kind == "offset":
        return msg("positions {shape} (offset, {first}...)", shape=shape, first=first)
    if kind == "batched":
        return msg("positions {shape} (batched, {first}...)", shape=shape, first=first)
    if kind == "long":
        return msg("positions {shape} (long, {first}...)", shape=shape, first=first)
    return msg("positions {shape} (random, {first}...)", shape=shape, first=first)


def _rope_cases(hidden):
    cases = []
    for i, (shape, kind, theta, dt) in enumerate(_rope_specs(hidden)):
        g = gen(9000 + 17 * i + (900 if hidden else 0))
        L = shape[-2]
        x = rand(*shape, dtype=dt, mean=0.4, std=2.5, generator=g)
        if kind == "arange":
            pos = torch.arange(L)
        elif kind == "offset":
            pos = torch.arange(L) + 37  # e.g. new tokens after a cache of 37
        elif (
            kind == "batched"
        ):  # one row per sequence: (B, 1, L) against (B, H, L, d), (B, L) against (B, L, d)
            rows = (shape[0], 1, L) if len(shape) == 4 else (shape[0], L)
            pos = torch.randint(0, 300, rows, generator=g)
        elif kind == "long":
            pos = torch.randint(90_000, 130_000, (L,), generator=g)
        else:
            pos = torch.randint(0, 2000, (L,), generator=g)
        kw = {} if theta == 10000.0 else {"theta": theta}
        cases.append(
            Case(
                msg(
                    "x {shape} {dtype}, {positions}, theta={theta}",
                    shape=tuple(shape),
                    dtype=dt,
                    positions=_positions_label(pos, kind),
                    theta=f"{theta:g}",
                ),
                [let("x", x), let("pos", pos), call("out", "apply_rope", ref("x"), ref("pos"), **kw)],
                ["out", "x", "pos"],
                facts=dict(
                    x=x,
                    pos=pos,
                    theta=theta,
                    dt=dt,
                    kind=kind,
                    raised_hint=_raised(kind, shape),
                ),
                size=x.numel(),
            )
        )
    return cases


def _float32_angles(got, x, pos, theta) -> bool:
    """An output off by about what angles rounded to float32 give (positions times frequencies in
    float32: about 1e-2 radians at positions around 1e5): the rotation is right, its angles are not
    float64."""
    if not isinstance(got, torch.Tensor) or got.shape != x.shape:
        return False
    d = x.shape[-1]
    inv = (float(theta) ** (-torch.arange(0, d, 2, dtype=F64) / d)).float()
    ang = (pos.float()[..., None] * inv).to(F64)
    a, b = x.to(F64)[..., 0::2], x.to(F64)[..., 1::2]
    rounded = torch.stack([a * ang.cos() - b * ang.sin(), a * ang.sin() + b * ang.cos()], dim=-1).flatten(-2)
    exp = ref_rope(x, pos, theta)
    err, scale = (got.to(F64) - exp).abs().max(), (rounded - exp).abs().max()
    return bool(torch.isfinite(err)) and float(err) <= 10 * float(scale) and float(scale) > 1e-6


def _rope_judge(case, out):
    f = case.facts
    x, pos, theta, dt = f["x"], f["pos"], f["theta"], f["dt"]
    exp = ref_rope(x, pos, theta)
    _compare(
        out["out"],
        exp,
        dt,
        msg("{name} output", name="apply_rope"),
        _rope_mistakes(x, pos, theta),
        FLOAT32_ANGLES
        if _float32_angles(out["out"], x, pos, theta)
        else N_(
            "rotate each pair (x[..., 2i], x[..., 2i+1]) at position p by the angle p * theta ** (-2i / d_head): "
            "(a, b) -> (a cos - b sin, a sin + b cos)"
        ),
    )
    if not torch.equal(out["x"], x) or not torch.equal(out["pos"], pos):
        raise CheckFailure(msg("{who} modified its input {name} in place", who="apply_rope", name="x"))


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


def _swiglu_mistakes(s, x):
    return [
        (
            N_(
                "w1 and w3 are swapped: the SiLU goes on w1(x), and w3(x) is the linear branch it multiplies: "
                "w2(silu(w1(x)) * w3(x))"
            ),
            lambda: ref_swiglu(s, x, swap=True),
        ),
        (
            N_("your gate is sigmoid(w1(x)) (that is GLU): SwiGLU's is silu(z) = z * sigmoid(z) (F.silu)"),
            lambda: ref_swiglu(s, x, gate="sigmoid"),
        ),
        (
            N_("your gate is relu(w1(x)) (that is ReGLU): SwiGLU's is silu(w1(x)) (F.silu)"),
            lambda: ref_swiglu(s, x, gate="relu"),
        ),
        (
            N_("your gate is gelu(w1(x)) (that is GEGLU): SwiGLU's is silu(w1(x)) (F.silu)"),
            lambda: ref_swiglu(s, x, gate="gelu"),
        ),
        (
            N_("the gate's other branch w3(x) is missing: w2(silu(w1(x)) * w3(x))"),
            lambda: ref_swiglu(s, x, no_gate=True),
        ),
        (
            N_("the SiLU is applied to the product: silu(w1(x)) * w3(x), the SiLU on w1(x) only"),
            lambda: ref_swiglu(s, x, outer=True),
        ),
        (
            N_("the SiLU is applied to both branches: only w1(x) goes through it, w3(x) stays linear"),
            lambda: ref_swiglu(s, x, both=True),
        ),
    ]


def _swiglu_specs(hidden):
    # (x shape, d_ff, dtype)
    if not hidden:
        return [
            ((2, 5, 12), 20, torch.float32),
            ((3, 4, 8), 24, torch.float64),
            ((7, 16), 44, torch.float64),
            ((2, 3, 6, 10), 26, torch.float32),
        ]
    return [
        ((5, 12), 30, torch.float64),
        ((2, 2, 3, 8), 20, torch.float32),
        ((4, 9, 24), 64, torch.float32),
        ((3, 6, 14), 36, torch.float64),
    ]


def _swiglu_cases(hidden):
    cases = []
    for i, (shape, d_ff, dt) in enumerate(_swiglu_specs(hidden)):
        g = gen(9100 + 19 * i + (900 if hidden else 0))
        d = shape[-1]
        s = swiglu_state(d, d_ff, g, dt)
        x = rand(*shape, dtype=dt, mean=0.3, std=2.0, generator=g)
        steps = [
            new("ffn", "SwiGLU", d, d_ff, state=s, dtype=dt),
            let("x", x),
            call("out", ref("ffn"), ref("x")),
        ]
        label = msg(
            "{module}, x {shape}", module=_module(f"SwiGLU(d_model={d}, d_ff={d_ff})", dt), shape=tuple(shape)
        )
        facts = dict(s=s, x=x, dt=dt, raised_hint=_raised("", shape))
        cases.append(Case(label, steps, ["out", "x"], facts=facts, size=x.numel() * d_ff))
    return cases


def _swiglu_judge(case, out):
    s, x, dt = case.facts["s"], case.facts["x"], case.facts["dt"]
    _compare(
        out["out"],
        ref_swiglu(s, x),
        dt,
        msg("{name} output", name="SwiGLU"),
        _swiglu_mistakes(s, x),
        N_("forward(x) = w2(silu(w1(x)) * w3(x)), with the module's own w1, w2, w3"),
    )
    if not torch.equal(out["x"], x):
        raise CheckFailure(msg("{who} modified its input {name} in place", who="SwiGLU", name="x"))


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


# ---------------------------------------------------------------------------------------------
# LlamaBlock


def block_state(d, h, hkv, d_ff, g, dtype):
    s = {"attn_norm.weight": rand(d, generator=g, mean=1.0, std=0.3)}
    s.update(gqa_state(d, h, hkv, g, F64, prefix="attn."))
    s["ffn_norm.weight"] = rand(d, generator=g, mean=0.8, std=0.3)
    s.update(swiglu_state(d, d_ff, g, F64, prefix="ffn."))
    return {k: v.to(dtype) for k, v in s.items()}


def _sub(state, prefix):
    return {k[len(prefix) :]: t for k, t in state.items() if k.startswith(prefix)}


def _rms(z, w, eps, kind="rms"):
    if kind == "layer":  # mean subtracted: LayerNorm without a bias
        z = z - z.mean(-1, keepdim=True)
    return z * torch.rsqrt(z.pow(2).mean(-1, keepdim=True) + eps) * w.to(F64)


def ref_block(
    s,
    x,
    h,
    hkv,
    eps=1e-6,
    theta=10000.0,
    positions=None,
    cache=None,
    order="pre",
    same_norm=False,
    norm_eps=None,
    norm="rms",
    attn_res=True,
    ffn_res=True,
):
    """The Llama block in float64 -> (y, (k, v)). order "pre" (the contract), "post" (norm after each
    residual sum) or "parallel" (y = x + attn(norm1(x)) + ffn(norm2(x))); same_norm uses attn_norm for
    both sublayers; norm_eps is the eps the norms actually use (None: eps)."""
    x = x.to(F64)
    e = eps if norm_eps is None else norm_eps
    w1 = s["attn_norm.weight"]
    w2 = w1 if same_norm else s["ffn_norm.weight"]
    kv = []

    def attn(z):
        y, c = ref_gqa(_sub(s, "attn."), z, h, hkv, theta, positions, cache)
        kv.append(c)
        return y

    def ffn(z):
        return ref_swiglu(_sub(s, "ffn."), z)

    if order == "pre":
        hh = (x if attn_res else 0) + attn(_rms(x, w1, e, norm))
        y = (hh if ffn_res else 0) + ffn(_rms(hh, w2, e, norm))
    elif order == "post":
        hh = _rms(x + attn(x), w1, e, norm)
        y = _rms(hh + ffn(hh), w2, e, norm)
    else:
        y = x + attn(_rms(x, w1, e, norm)) + ffn(_rms(x, w2, e, norm))
    return y, kv[0]


def _block_mistakes(s, x, h, hkv, eps, cache, positions=None, default_eps=False):
    def m(**kw):
        return lambda: ref_block(s, x, h, hkv, eps, positions=positions, cache=cache, **kw)[0]

    out = []
    if positions is not None:
        out.append(
            (
                N_(
                    "your block does not pass its positions on to the attention: self.attn(attn_norm(x), "
                    "positions, kv_cache)"
                ),
                lambda: ref_block(s, x, h, hkv, eps, cache=cache)[0],
            )
        )
    out += [
        (
            N_(
                "your block is Post-norm: the Llama block normalizes inside each branch, h = x + attn(attn_norm(x)); "
                "y = h + ffn(ffn_norm(h))"
            ),
            m(order="post"),
        ),
        (
            N_(
                "your block is parallel (attention and the FFN both read x): the FFN reads h = x + attn(attn_norm(x)), "
                "y = h + ffn(ffn_norm(h))"
            ),
            m(order="parallel"),
        ),
        (
            N_(
                "the FFN's input is normalized with attn_norm: each sublayer has its own RMSNorm, ffn_norm for the FFN"
            ),
            m(same_norm=True),
        ),
        (
            N_(
                "your norm subtracts the mean (that is LayerNorm): RMSNorm divides by the root mean square only, "
                "nn.RMSNorm(d_model, eps=eps)"
            ),
            m(norm="layer"),
        ),
        (
            N_("the residual connection around the attention is missing: h = x + attn(attn_norm(x))"),
            m(attn_res=False),
        ),
        (N_("the residual connection around the FFN is missing: y = h + ffn(ffn_norm(h))"), m(ffn_res=False)),
    ]
    if default_eps:
        # built with its default eps, a block whose norms ignore eps gets nn.RMSNorm's own default (the
        # dtype's machine epsilon): name that, not a wrong default
        out.append(
            (
                N_(
                    "your RMSNorms ignore the eps argument: pass it on, nn.RMSNorm(d_model, eps=eps) (nn.RMSNorm's "
                    "own default is the dtype's machine epsilon)"
                ),
                m(norm_eps=torch.finfo(torch.float64).eps),
            )
        )
        out.append(
            (
                N_(
                    "eps should default to 1e-6: def __init__(self, d_model, n_heads, n_kv_heads, d_ff, eps=1e-6), "
                    "passed on to both nn.RMSNorm(d_model, eps=eps)"
                ),
                m(norm_eps=1e-5),
            )
        )
    if eps > 1e-3:
        out.append(
            (
                N_(
                    "your RMSNorms ignore the eps argument: pass it on, nn.RMSNorm(d_model, eps=eps) (nn.RMSNorm's "
                    "own default is the dtype's machine epsilon)"
                ),
                m(norm_eps=torch.finfo(torch.float32).eps),
            )
        )
    return out


def _block_specs(hidden):
    # (B, T, d_model, n_heads, n_kv_heads, d_ff, eps (None: the default), dtype, T_past, T_new, positions
    # given (strided) or not); the hidden cases repeat each kind with other data and sizes
    if not hidden:
        return [
            (2, 5, 16, 4, 2, 24, None, torch.float32, 0, 0, False),
            (1, 6, 20, 2, 2, 36, None, torch.float64, 0, 0, False),
            (3, 4, 24, 6, 3, 40, 0.1, torch.float64, 0, 0, False),
            (2, 7, 16, 4, 2, 24, 0.1, torch.float64, 0, 0, True),
            (2, 8, 16, 4, 1, 20, 0.05, torch.float64, 5, 3, False),
            (2, 10, 24, 4, 2, 32, 0.1, torch.float32, 9, 1, False),
        ]
    return [
        (4, 7, 32, 8, 2, 48, 0.2, torch.float32, 0, 0, False),
        (2, 5, 24, 3, 1, 30, None, torch.float64, 0, 0, False),
        (3, 6, 16, 2, 2, 28, 0.1, torch.float32, 0, 0, True),
        (2, 9, 20, 2, 1, 24, 0.05, torch.float64, 6, 3, False),
        (1, 8, 16, 4, 2, 24, None, torch.float32, 7, 1, False),
    ]


def _block_cases(hidden):
    cases = []
    for i, (b, t, d, h, hkv, d_ff, eps, dt, t_past, t_new, given) in enumerate(_block_specs(hidden)):
        g = gen(9400 + 31 * i + d + (900 if hidden else 0))
        s = block_state(d, h, hkv, d_ff, g, dt)
        x = rand(b, t, d, dtype=dt, mean=0.2, std=0.5 if eps else 2.0, generator=g)
        kw = {} if eps is None else {"eps": eps}
        eps_ = 1e-6 if eps is None else eps
        head = _module(
            f"LlamaBlock(d_model={d}, n_heads={h}, n_kv_heads={hkv}, d_ff={d_ff}"
            + (f", eps={eps})" if eps is not None else ")"),
            dt,
        )
        pos = torch.arange(t) * 5 + 3 if given else None
        cases.append(
            _with_and_without_cache(
                new("blk", "LlamaBlock", d, h, hkv, d_ff, state=s, dtype=dt, **kw),
                head,
                x,
                (t_past, t_new, pos),
                lambda x_past, s=s, h=h, hkv=hkv, eps_=eps_: ref_block(s, x_past, h, hkv, eps_)[1],
                dict(s=s, h=h, hkv=hkv, eps=eps_, dt=dt, default_eps=eps is None),
            )
        )
    return cases


def _block_judge(case, out):
    f = case.facts
    s, x, h, hkv, eps, dt = f["s"], f["x"], f["h"], f["hkv"], f["eps"], f["dt"]
    cache, pos = f.get("cache"), f.get("pos")
    y, new_cache = _pair(out["out"], "LlamaBlock")
    exp, (ek, ev) = ref_block(s, x, h, hkv, eps, positions=pos, cache=cache)
    _compare(
        y,
        exp,
        dt,
        msg("{name} output {y} with a cache", name="LlamaBlock", y="y")
        if cache is not None
        else msg("{name} output {y}", name="LlamaBlock", y="y"),
        _block_mistakes(s, x, h, hkv, eps, cache, pos, f.get("default_eps", False)),
        N_(
            "first make GroupedQueryAttention and SwiGLU pass their checks; then h = x + attn(attn_norm(x)) (with the "
            "positions and the cache), y = h + ffn(ffn_norm(h)), attn_norm and ffn_norm nn.RMSNorm(d_model, eps=eps)"
        ),
    )
    _check_cache(new_cache, ek, ev, dt, "new_cache")
    if cache is None and not torch.equal(out["x"], x):
        raise CheckFailure(msg("{who} modified its input {name} in place", who="LlamaBlock", name="x"))


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("apply_rope", _rope_cases, _rope_judge),
    Question("SwiGLU", _swiglu_cases, _swiglu_judge),
    Question("repeat_kv", _repeat_cases, _repeat_judge),
    Question("GroupedQueryAttention", _gqa_cases, _gqa_judge, needs=("apply_rope", "repeat_kv")),
    Question("LlamaBlock", _block_cases, _block_judge, needs=("GroupedQueryAttention", "SwiGLU")),
)

check = _core.lesson_check(QUESTIONS, "apply_rope", devices=False)
