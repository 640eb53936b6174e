"""Checks for lesson 07_decoder: the shift, causal self-attention with a KV cache, a GPT, sampling,
generation.

The references are float64 functions in this module, run in the judge's process with the weights
the case sent to the student's module. Every property is probed by behaviour: a perturbed future
token must not change earlier outputs; a run with a KV cache must equal the run over the whole
sequence; the tied output weight must be the embedding's own parameter (loading two different
matrices into a tied model leaves one); sampling is judged by the frequencies of many seeded draws
(temperature 0 and top_k=1 are deterministic). The classic mistakes are recomputed by the same
references with one thing changed, so a hint can say which one. The graded names and their
behaviour are documented in docs/api/07_decoder.md.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import _core, _judge
from ._core import (
    LINE,
    Case,
    Question,
    call,
    gen,
    got_expected,
    graded,
    helper,
    hint_line,
    let,
    new,
    rand,
    ref,
)
from ._judge import CheckFailure, assert_close, diagnose, expect_tensor
from .i18n import N_, msg

LESSON = "07_decoder"
HELPERS = ("record_generate", "init_stats")
F64 = torch.float64
CACHED = 10**6  # cases that use a KV cache are judged after those that do not

# ---------------------------------------------------------------------------------------------
# shift_targets


def _shift_cases(hidden):
    specs = [(2, 6, 11), (3, 9, 7)] if not hidden else [(5, 13, 50), (1, 4, 3), (4, 33, 20)]
    cases = []
    for i, (b, t1, v) in enumerate(specs):
        g = gen(7000 + 13 * i + t1 + (900 if hidden else 0))
        tokens = torch.randint(0, v, (b, t1), generator=g)
        cases.append(
            Case(
                msg("tokens {shape} (B, T+1) with ids in [0, {v})", shape=tuple(tokens.shape), v=v),
                [let("tokens", tokens), call("out", "shift_targets", ref("tokens"))],
                ["out", "tokens"],
                facts=dict(tokens=tokens),
                size=b * t1,
            )
        )
    return cases


def _shift_judge(case, out):
    tokens = case.facts["tokens"]
    got = out["out"]
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailure(
            msg("shift_targets should return a pair (inputs, targets), got {got}", got=repr(got))
        )
    inputs, targets = got
    exp_in, exp_tg = tokens[:, :-1], tokens[:, 1:]
    b, t1 = tokens.shape
    for what, g in (("inputs", inputs), ("targets", targets)):
        expect_tensor(g, what)
        if g.dtype != torch.int64:
            raise CheckFailure(
                msg("{what} should be token ids.", what=what) + got_expected(g.dtype, "torch.int64")
            )
    if tuple(inputs.shape) == (b - 1, t1) or tuple(targets.shape) == (b - 1, t1):
        raise CheckFailure(
            msg(
                "shift_targets shifted along the batch dim: inputs {got}, expected {expected}.",
                got=tuple(inputs.shape),
                expected=tuple(exp_in.shape),
            )
            + hint_line(N_("shift along the time axis, dim 1: tokens[:, :-1] and tokens[:, 1:]"))
        )
    if torch.equal(inputs, exp_tg) and torch.equal(targets, exp_in):
        raise CheckFailure(
            msg("shift_targets shifted the wrong way: your targets are the tokens *before* each input.")
            + hint_line(
                N_(
                    "position t reads token t and predicts token t+1: inputs = tokens[:, :-1], "
                    "targets = tokens[:, 1:]"
                )
            )
        )
    if tuple(targets.shape) == tuple(exp_tg.shape) and torch.equal(targets, inputs):
        raise CheckFailure(
            msg(
                "shift_targets returned targets equal to the inputs: the targets are not shifted, so the model "
                "would learn to copy its input."
            )
            + hint_line(N_("targets = tokens[:, 1:] (the next token)"))
        )
    if tuple(targets.shape) == (b, t1) or tuple(inputs.shape) == (b, t1):
        raise CheckFailure(
            msg("shift_targets returned a tensor of the full length T+1 = {n}.", n=t1)
            + hint_line(
                msg(
                    "targets are not shifted: inputs = tokens[:, :-1], targets = tokens[:, 1:], "
                    "both (B, T) = {shape}",
                    shape=tuple(exp_in.shape),
                )
            )
        )
    assert_close(inputs, exp_in, "inputs", "inputs = tokens[:, :-1]")  # the hint is code, shown as it is
    assert_close(targets, exp_tg, "targets", N_("targets = tokens[:, 1:] (the next token at each position)"))
    if not torch.equal(out["tokens"], tokens):
        raise CheckFailure(
            msg("{who} modified its input {name} in place", who="shift_targets", name="tokens")
        )


# ---------------------------------------------------------------------------------------------
# CausalSelfAttention: a float64 reference, with the classic mistakes as flags


def attn_state(d, g, dtype, prefix=""):
    s = {
        "qkv.weight": rand(3 * d, d, generator=g, std=1.5 / math.sqrt(d)),
        "qkv.bias": rand(3 * d, generator=g, mean=0.1, std=0.3),
        "proj.weight": rand(d, d, generator=g, std=1.0 / math.sqrt(d)),
        "proj.bias": rand(d, generator=g, mean=-0.1, std=0.3),
    }
    return {prefix + k: v.to(dtype) for k, v in s.items()}


def ref_attention(
    s,
    x,
    n_heads,
    cache=None,
    mask="causal",
    scale="head",
    order="qkv",
    offset=True,
    new_first=False,
    no_transpose=False,
    softmax_dim=-1,
    merge_no_transpose=False,
):
    """Causal self-attention in float64 -> (y, (k, v)). With the defaults, the contract's behaviour.

    mask: "causal" | "none" | "inverted" (attends to the future, itself included) | "strict" (keys
    j < t: not even itself);
    scale: "head" (1/sqrt(d_head)) | "model" (1/sqrt(d_model)) | "none";
    order: how q, k, v are read from the qkv output; offset=False restarts the mask's positions at 0
    when there is a cache; new_first puts the new keys before the cached ones; softmax_dim=-2
    normalizes over the queries; merge_no_transpose merges the heads by a reshape of (B, H, T, dh)."""
    x = x.to(F64)
    b, t, d = x.shape
    dh = d // n_heads
    qkv = F.linear(x, s["qkv.weight"].to(F64), s["qkv.bias"].to(F64))  # (B, T, 3d)
    parts = dict(zip(order, qkv.split(d, dim=-1)))

    def heads(z):
        if no_transpose:
            return z.reshape(b, n_heads, t, dh)  # the view without the transpose
        return z.view(b, t, n_heads, dh).transpose(1, 2)  # (B, T, d) -> (B, H, T, dh)

    q, k, v = heads(parts["q"]), heads(parts["k"]), heads(parts["v"])
    t_past = 0
    if cache is not None:
        pk, pv = (c.to(F64) for c in cache)
        t_past = pk.shape[2]
        k = torch.cat([k, pk] if new_first else [pk, k], dim=2)  # (B, H, T_past + T, dh)
        v = torch.cat([v, pv] if new_first else [pv, v], dim=2)
    tk = k.shape[2]
    div = {"head": math.sqrt(dh), "model": math.sqrt(d), "none": 1.0}[scale]
    scores = q @ k.transpose(-2, -1) / div  # (B, H, T, dh) x (B, H, dh, Tk) -> (B, H, T, Tk)
    qpos = torch.arange(t)[:, None] + (t_past if offset else 0)  # absolute positions of the queries
    kpos = torch.arange(tk)[None, :]  # new_first: the mask still counts keys in concatenated order
    allowed = {
        "causal": kpos <= qpos,
        "none": torch.ones(t, tk, dtype=torch.bool),
        "inverted": kpos >= qpos,
        "strict": kpos < qpos,
    }[mask]
    scores = scores.masked_fill(~allowed, -math.inf)
    y = torch.softmax(scores, dim=softmax_dim) @ v  # (B, H, T, Tk) x (B, H, Tk, dh) -> (B, H, T, dh)
    if merge_no_transpose:
        y = y.reshape(b, t, d)  # (B, H, T, dh) read as (B, T, d): positions and heads mixed
    else:
        y = y.transpose(1, 2).reshape(b, t, d)  # (B, H, T, dh) -> (B, T, d)
    y = F.linear(y, s["proj.weight"].to(F64), s["proj.bias"].to(F64))
    return y, (k, v)


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


def _tol(dtype):
    return (1e-4, 1e-4) if dtype == torch.float32 else (1e-7, 1e-8)


def _check_cache(got, exp_k, exp_v, dtype, what):
    """new_cache must be (k, v), each (B, n_heads, T_total, d_head)."""
    b, h, tt, dh = exp_k.shape
    for name, g, e in _judge.cache_pair(got, exp_k, exp_v, what):
        if tuple(g.shape) != tuple(e.shape):
            layouts = {
                (b, tt, h, dh): N_("(B, T, n_heads, d_head): the heads are not transposed to dim 1"),
                (b, tt, h * dh): N_("(B, T, d_model): it is cached before the heads are split"),
                (b, h, dh, tt): N_("(B, n_heads, d_head, T): k is cached transposed"),
            }
            why = layouts.get(tuple(g.shape))
            if why is not None:
                hint = msg(
                    "the cache is laid out as {layout}; keep k and v as (B, n_heads, T, d_head) and "
                    "concatenate along the time axis, dim 2",
                    layout=why,
                )
            else:
                hint = N_(
                    "the cache is concatenated on the wrong axis; keep k and v as (B, n_heads, T, d_head) and "
                    "concatenate along the time axis, dim 2"
                )
            raise CheckFailure(
                msg("{cache}: {name} has the wrong shape.", cache=what, name=name)
                + got_expected(
                    tuple(g.shape),
                    f"{tuple(e.shape)} = (B, n_heads, T_past + T, d_head)",  # code, shown as it is
                )
                + hint_line(hint)
            )
        named = msg("{cache}: {name}", cache=what, name=name)  # one of the cache's tensors
        _judge.expect_dtype(g, dtype, named)
        rtol, atol = _tol(dtype)
        assert_close(
            g.to(F64),
            e,
            named,
            N_(
                "the cache holds the keys and values of every position so far, k and v straight from qkv(x) "
                "split into heads (unscaled), earlier positions first"
            ),
            rtol=rtol,
            atol=atol,
        )


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


def _pair(got, what):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailure(
            msg("{call} should return a pair (y, new_cache), got {got}", call=what, got=repr(got))
        )
    return got


def _nan_hint(got):
    """Which query positions are NaN says which mask hid every key from them."""
    rows = torch.isnan(got).reshape(-1, got.shape[-2], got.shape[-1]).any(-1).any(0)  # (T,)
    t = rows.numel()
    if t > 1 and rows[0] and not rows[1:].any():
        return N_(
            "only the first position is NaN: your mask hides the diagonal (keys j < t), so the query at "
            "position 0 has no key left and its softmax is 0/0. The query at t may attend to keys "
            "0..t, its own included: mask[t, j] = j <= t"
        )
    if t > 1 and rows[-1] and not rows[:-1].any():
        return N_(
            "only the last position is NaN: your causal mask is inverted and hides the diagonal (keys "
            "j > t), so the last query has no key left. True on and below the diagonal means 'may "
            "attend': mask[t, j] = j <= t"
        )
    return N_(
        "a query with every key masked gives NaN: the causal mask is inverted (the last query has no "
        "future key), or the mask's positions ignore the cache"
    )


def _compare_y(got, exp, dt, what, mistakes, generic):
    expect_tensor(got, what, shape=exp.shape)
    _judge.expect_dtype(got, dt, what)
    if torch.isnan(got).any():
        raise CheckFailure(msg("{what} contains NaN.", what=what) + hint_line(_nan_hint(got)))
    rtol, atol = _tol(dt)
    assert_close(got.to(F64), exp, what, diagnose(got.to(F64), mistakes) or generic, rtol=rtol, atol=atol)


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


# ---------------------------------------------------------------------------------------------
# GPT


def gpt_state(v, d, n_layers, max_len, g, dtype):
    """Random weights with the state-dict names of the lesson's GPT (head.weight IS tok_emb.weight)."""
    emb = rand(v, d, generator=g, mean=0.05, std=1.0)
    s = {"tok_emb.weight": emb, "pos_emb.weight": rand(max_len, d, generator=g, std=0.8)}
    for i in range(n_layers):
        p = f"blocks.{i}."
        s[p + "ln1.weight"] = rand(d, generator=g, mean=1.0, std=0.3)
        s[p + "ln1.bias"] = rand(d, generator=g, mean=0.1, std=0.3)
        s.update(attn_state(d, g, F64, prefix=p + "attn."))
        s[p + "ln2.weight"] = rand(d, generator=g, mean=0.9, std=0.3)
        s[p + "ln2.bias"] = rand(d, generator=g, mean=-0.1, std=0.3)
        s[p + "mlp.0.weight"] = rand(4 * d, d, generator=g, std=1.2 / math.sqrt(d))
        s[p + "mlp.0.bias"] = rand(4 * d, generator=g, mean=0.1, std=0.3)
        s[p + "mlp.2.weight"] = rand(d, 4 * d, generator=g, std=1.0 / math.sqrt(4 * d))
        s[p + "mlp.2.bias"] = rand(d, generator=g, mean=0.05, std=0.3)
    s["ln_f.weight"] = rand(d, generator=g, mean=1.1, std=0.3)
    s["ln_f.bias"] = rand(d, generator=g, mean=-0.2, std=0.3)
    s["head.weight"] = emb
    return {k: t.to(dtype) for k, t in s.items()}


def _sub(state, prefix):
    return {k[len(prefix) :]: t for k, t in state.items() if k.startswith(prefix)}


def ref_gpt(s, idx, n_heads, cache=None, pos=True, final_norm=True, pre_ln=True, act="gelu", offset=True):
    """The GPT forward in float64 -> (logits, [(k, v) per block]). Defaults: the contract."""
    d = s["tok_emb.weight"].shape[1]
    n_layers = len({k.split(".")[1] for k in s if k.startswith("blocks.")})
    t = idx.shape[1]
    t_past = cache[0][0].shape[2] if cache is not None else 0
    start = t_past if offset else 0
    x = s["tok_emb.weight"].to(F64)[idx]  # (B, T) -> (B, T, d)
    if pos:
        x = x + s["pos_emb.weight"].to(F64)[start : start + t]  # + (T, d), positions T_past..T_past+T-1

    def ln(z, w, b_):
        return F.layer_norm(z, (d,), w.to(F64), b_.to(F64), 1e-5)

    activation = {
        "gelu": F.gelu,
        "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"),  # GPT-2's own: accepted as well
        "relu": F.relu,
    }[act]
    new_cache = []
    for i in range(n_layers):
        p = _sub(s, f"blocks.{i}.")
        past = cache[i] if cache is not None else None

        def attn(z, p=p, past=past):
            y, kv = ref_attention(_sub(p, "attn."), z, n_heads, past, offset=offset)
            new_cache.append(kv)
            return y

        def mlp(z, p=p):
            a = activation(F.linear(z, p["mlp.0.weight"].to(F64), p["mlp.0.bias"].to(F64)))
            return F.linear(a, p["mlp.2.weight"].to(F64), p["mlp.2.bias"].to(F64))

        if pre_ln:
            x = x + attn(ln(x, p["ln1.weight"], p["ln1.bias"]))
            x = x + mlp(ln(x, p["ln2.weight"], p["ln2.bias"]))
        else:
            x = ln(x + attn(x), p["ln1.weight"], p["ln1.bias"])
            x = ln(x + mlp(x), p["ln2.weight"], p["ln2.bias"])
    if final_norm:
        x = ln(x, s["ln_f.weight"], s["ln_f.bias"])
    return x @ s["head.weight"].to(F64).T, new_cache  # (B, T, d) x (d, V) -> (B, T, V)


def _gpt_specs(hidden):
    # (B, T, vocab, d_model, n_heads, n_layers, max_len, dtype, T_past, T_new)
    if not hidden:
        return [
            (2, 6, 11, 12, 3, 2, 9, torch.float32, 0, 0),
            (3, 5, 7, 8, 2, 1, 7, torch.float64, 0, 0),
            (2, 8, 11, 12, 3, 2, 10, torch.float64, 7, 1),
        ]
    return [
        (4, 9, 13, 16, 4, 2, 12, torch.float64, 0, 0),
        (2, 10, 10, 20, 5, 3, 16, torch.float32, 6, 4),
        (3, 12, 9, 16, 2, 2, 12, torch.float32, 11, 1),
    ]


def _gpt_cases(hidden):
    cases = []
    for i, (b, t, v, d, h, n, max_len, dt, t_past, t_new) in enumerate(_gpt_specs(hidden)):
        g = gen(7300 + 41 * i + 5 * d + (900 if hidden else 0))
        s = gpt_state(v, d, n, max_len, g, dt)
        idx = torch.randint(0, v, (b, t), generator=g)
        model = f"GPT(vocab_size={v}, d_model={d}, n_heads={h}, n_layers={n}, max_len={max_len})"
        steps = [new("model", "GPT", v, d, h, n, max_len, state=s, dtype=dt)]
        if t_past == 0:
            steps += [let("idx", idx), call("full", ref("model"), ref("idx"))]
            cases.append(
                Case(
                    msg(
                        "{model} ({dtype}), idx {shape}, no cache",
                        model=model,
                        dtype=dt,
                        shape=tuple(idx.shape),
                    ),
                    steps,
                    ["full", "idx"],
                    facts=dict(s=s, idx=idx, h=h, dt=dt),
                    size=b * t * d * n,
                )
            )
        else:
            _, cache = ref_gpt(s, idx[:, :t_past], h)
            cache = [(k.to(dt), vv.to(dt)) for k, vv in cache]
            idx_new = idx[:, t_past : t_past + t_new]
            steps += [let("idx_new", idx_new), let("cache", cache)]
            steps.append(call("inc", ref("model"), ref("idx_new"), kv_cache=ref("cache")))
            cases.append(
                Case(
                    msg(
                        "{model} ({dtype}), idx {shape} (positions {first}..{last}) with kv_cache = one (k, v) "
                        "per block for the first T_past={t_past} positions",
                        model=model,
                        dtype=dt,
                        shape=tuple(idx_new.shape),
                        first=t_past,
                        last=t_past + t_new - 1,
                        t_past=t_past,
                    ),
                    steps,
                    ["inc"],
                    facts=dict(s=s, idx_new=idx_new, cache=cache, h=h, dt=dt),
                    size=CACHED + b * t * d * n,
                )
            )
    # the tied weights: load two different matrices; a tied model keeps one of them in both places
    g = gen(7390 + (900 if hidden else 0))
    v, d, h, n, max_len = (9, 8, 2, 1, 6) if not hidden else (12, 16, 4, 2, 10)
    s = gpt_state(v, d, n, max_len, g, torch.float32)
    s["head.weight"] = rand(v, d, generator=g, mean=-0.2, std=0.7).float()
    cases.append(
        Case(
            msg(
                "{model} loaded with different matrices for {a} and {b}",
                model=f"GPT(vocab_size={v}, d_model={d}, n_heads={h}, n_layers={n}, max_len={max_len})",
                a="tok_emb.weight",
                b="head.weight",
            ),
            [new("model", "GPT", v, d, h, n, max_len, state=s, shared_ok=True)],
            ["model.tok_emb.weight", "model.head.weight"],
            facts=dict(tie=True, s=s),
            size=1,
        )
    )
    return cases


def _gpt_mistakes(s, idx, h, cache=None):
    m = [
        (
            N_(
                "the final LayerNorm ln_f is missing: a Pre-LN stack normalizes its residual stream once, "
                "after the last block, before the output layer"
            ),
            lambda: ref_gpt(s, idx, h, cache, final_norm=False)[0],
        ),
        (
            N_("the position embeddings are missing: x = tok_emb(idx) + pos_emb(positions)"),
            lambda: ref_gpt(s, idx, h, cache, pos=False)[0],
        ),
        (
            N_("your blocks are Post-LN: the GPT block is Pre-LN, x = x + attn(ln1(x)); x = x + mlp(ln2(x))"),
            lambda: ref_gpt(s, idx, h, cache, pre_ln=False)[0],
        ),
        (
            N_("the MLP uses ReLU: GPT's uses GELU, mlp = Linear(d, 4d) -> GELU -> Linear(4d, d)"),
            lambda: ref_gpt(s, idx, h, cache, act="relu")[0],
        ),
    ]
    if cache is not None:
        m.insert(
            0,
            (
                N_(
                    "with a cache, your positions restart at 0: the new tokens are at positions T_past.."
                    "T_past + T - 1 (T_past = kv_cache[0][0].shape[2]), both for pos_emb and for the causal mask"
                ),
                lambda: ref_gpt(s, idx, h, cache, offset=False)[0],
            ),
        )
        m.insert(
            1,
            (
                N_(
                    "with a cache, the position embeddings restart at 0: the new tokens are at positions T_past.."
                    "T_past + T - 1, with T_past = kv_cache[0][0].shape[2]"
                ),
                lambda: _pos_restart_only(s, idx, h, cache),
            ),
        )
    return m


def _pos_restart_only(s, idx, h, cache):
    """Positions of pos_emb restarted at 0, while the attention itself handles the cache right."""
    t_past, t = cache[0][0].shape[2], idx.shape[1]
    shifted = dict(s)
    pe = s["pos_emb.weight"].clone()
    pe[t_past : t_past + t] = s["pos_emb.weight"][:t]
    shifted["pos_emb.weight"] = pe
    return ref_gpt(shifted, idx, h, cache)[0]


def _reference_gpt(logits, dt, s, idx, h, cache=None):
    """The reference GPT's (logits, cache): with the exact GELU (nn.GELU()), or with GPT-2's tanh
    approximation (nn.GELU(approximate="tanh")) when the answer's logits match that one."""
    exact = ref_gpt(s, idx, h, cache)
    if isinstance(logits, torch.Tensor) and logits.shape == exact[0].shape and logits.is_floating_point():
        tanh = ref_gpt(s, idx, h, cache, act="gelu_tanh")
        if not _judge.close(logits.to(F64), exact[0], *_tol(dt)) and _judge.close(
            logits.to(F64), tanh[0], *_tol(dt)
        ):
            return tanh
    return exact


GPT_GENERIC = N_(
    "first make CausalSelfAttention pass its check; then x = tok_emb(idx) + pos_emb(positions), "
    "each block x = x + attn(ln1(x)); x = x + mlp(ln2(x)), then ln_f, then head"
)
GPT_GENERIC_CACHE = N_(
    "first make CausalSelfAttention pass its check; then x = tok_emb(idx) + pos_emb(positions), "
    "each block x = x + attn(ln1(x)); x = x + mlp(ln2(x)), then ln_f, then head; with a cache, give "
    "block i its kv_cache[i], and start the positions at T_past"
)


def _gpt_judge(case, out):
    f = case.facts
    if f.get("tie"):
        e, w = out["model.tok_emb.weight"], out["model.head.weight"]
        expect_tensor(e, "model.tok_emb.weight", shape=f["s"]["tok_emb.weight"].shape)
        expect_tensor(w, "model.head.weight", shape=f["s"]["head.weight"].shape)
        if not torch.equal(e, w):
            raise CheckFailure(
                msg(
                    "the output weight is not tied to the token embedding: after loading two different "
                    "matrices, your model.head.weight and model.tok_emb.weight differ, so they are two "
                    "separate matrices."
                )
                + hint_line(N_("make them one parameter: self.head.weight = self.tok_emb.weight"))
            )
        return
    s, h, dt = f["s"], f["h"], f["dt"]
    if "idx" in f:
        idx = f["idx"]
        logits, cache = _pair(out["full"], "GPT(idx)")
        exp, exp_cache = _reference_gpt(logits, dt, s, idx, h)
        _compare_y(
            logits, exp, dt, msg("{module} logits", module="GPT"), _gpt_mistakes(s, idx, h), GPT_GENERIC
        )
        if not isinstance(cache, (list, tuple)) or len(cache) != len(exp_cache):
            raise CheckFailure(
                msg("GPT's new_cache should be a list with one (k, v) per block.")
                + got_expected(f"{cache!r:.80}", msg("a list of {n} pairs", n=len(exp_cache)))
            )
        for i, (c, (ek, ev)) in enumerate(zip(cache, exp_cache)):
            _check_cache(c, ek, ev, dt, msg("new_cache[{i}] (block {i})", i=i))
        if not torch.equal(out["idx"], idx):
            raise CheckFailure(msg("{who} modified its input {name} in place", who="GPT", name="idx"))
    else:
        idx_new, past = f["idx_new"], f["cache"]
        logits, cache = _pair(out["inc"], "GPT(idx, kv_cache)")
        exp, exp_cache = _reference_gpt(logits, dt, s, idx_new, h, past)
        _compare_y(
            logits,
            exp,
            dt,
            msg("{module} logits with a cache", module="GPT"),
            _gpt_mistakes(s, idx_new, h, past),
            GPT_GENERIC_CACHE,
        )
        if not isinstance(cache, (list, tuple)) or len(cache) != len(exp_cache):
            raise CheckFailure(msg("GPT's new_cache should be a list with one (k, v) per block"))
        for i, (c, (ek, ev)) in enumerate(zip(cache, exp_cache)):
            _check_cache(c, ek, ev, dt, msg("new_cache[{i}] (block {i})", i=i))


# GPT_init: a fresh model predicts the uniform distribution, so its loss is close to ln V


def _init_cases(hidden):
    specs = [(50, 32, 4, 2, 16, 1)] if not hidden else [(97, 48, 4, 2, 24, 2), (300, 64, 8, 1, 32, 3)]
    cases = []
    for v, d, h, n, max_len, sd in specs:
        g = gen(7500 + sd)
        idx = torch.randint(0, v, (8, max_len), generator=g)
        targets = torch.randint(0, v, (8, max_len), generator=g)
        cases.append(
            Case(
                msg(
                    "a fresh {model} (torch.manual_seed({seed})), idx {shape}",
                    model=f"GPT(vocab_size={v}, d_model={d}, n_heads={h}, n_layers={n}, max_len={max_len})",
                    seed=sd,
                    shape=tuple(idx.shape),
                ),
                [
                    _core.seed(sd),
                    new("model", "GPT", v, d, h, n, max_len),
                    let("idx", idx),
                    call("out", ref("model"), ref("idx")),
                    call("stats", helper("decoder.init_stats"), ref("model")),
                ],
                ["out", "stats"],
                facts=dict(v=v, d=d, n=n, idx=idx, targets=targets),
                size=v * d,
            )
        )
    return cases


INIT_MARGIN = 0.1  # |initial loss - ln V|; measured: 0.01-0.02 with std 0.02, > 3 with N(0, 1) embeddings
INIT_STD = 0.02  # GPT-2's; the residual projections may be scaled down by 1/sqrt(2 n_layers) (nanoGPT)


def init_stats(model) -> list:
    """[name, numel, mean, std, largest |value|] of each parameter of a fresh model (a tied one once),
    reported from the student's kernel; the judge decides from these numbers."""
    rows = []
    with torch.no_grad():
        for name, p in list(model.named_parameters())[:200]:
            t = p.detach().double().reshape(-1)
            n = t.numel()
            if t.is_meta:  # no data to read (tests/test_devices.py runs every case on "meta")
                rows.append([str(name)[:80], int(n), 0.0, 0.0, 0.0])
                continue
            std = float(t.std()) if n > 1 else 0.0
            rows.append(
                [
                    str(name)[:80],
                    int(n),
                    float(t.mean()) if n else 0.0,
                    std,
                    float(t.abs().max()) if n else 0.0,
                ]
            )
    return rows


def _init_stats_judge(stats, n_layers: int) -> None:
    """Embedding and Linear weights drawn from N(0, 0.02^2) (down to 0.02 / sqrt(2 n_layers) for
    the residual projections), their biases 0; LayerNorms are left as PyTorch makes them."""
    if not isinstance(stats, (list, tuple)) or not all(
        isinstance(r, (list, tuple)) and len(r) == 5 and isinstance(r[0], str) for r in stats
    ):
        raise CheckFailure(
            msg("the fresh GPT's parameters could not be read back: {got}", got=f"{stats!r:.80}")
        )
    low, high = 0.8 * INIT_STD / math.sqrt(2 * n_layers), 1.2 * INIT_STD
    for name, n, mean, std, largest in stats:
        parts = name.split(".")
        if any(part.startswith("ln") for part in parts) or n < 2:
            continue
        if parts[-1] == "bias" and largest != 0:
            raise CheckFailure(
                msg("a fresh GPT is not initialized as GPT-2 is: a bias does not start at 0.")
                + got_expected(
                    msg("{name} with largest |value| {largest}", name=name, largest=f"{largest:.3g}"),
                    f"{name} = 0",
                )
                + hint_line(
                    N_(
                        "GPT-2 starts every Linear's bias at 0: nn.init.zeros_(m.bias) for each nn.Linear "
                        "that has one"
                    )
                )
            )
        if parts[-1] != "weight":
            continue
        if not low <= std <= high or abs(mean) > 6 * std / math.sqrt(n) + 1e-4:
            raise CheckFailure(
                msg("a fresh GPT is not initialized as GPT-2 is: a weight is not drawn from N(0, 0.02^2).")
                + got_expected(
                    f"{name}: mean={mean:.3g}, std={std:.3g}",
                    msg(
                        "mean=0, std=0.02 (down to 0.02 / sqrt(2 * n_layers) = {std} for a residual projection)",
                        std=f"{INIT_STD / math.sqrt(2 * n_layers):.3g}",
                    ),
                )
                + hint_line(
                    N_(
                        "GPT-2 draws the embeddings and every Linear weight from N(0, 0.02^2): "
                        "nn.init.normal_(m.weight, mean=0.0, std=0.02)"
                    )
                )
            )


def _init_judge(case, out):
    v, targets = case.facts["v"], case.facts["targets"]
    logits, _ = _pair(out["out"], "GPT(idx)")
    expect_tensor(logits, msg("{module} logits", module="GPT"), shape=(*targets.shape, v))
    loss = F.cross_entropy(logits.to(F64).reshape(-1, v), targets.reshape(-1)).item()
    if not abs(loss - math.log(v)) < INIT_MARGIN:
        idx, d = case.facts["idx"], case.facts["d"]
        z = logits.to(F64)
        own = z.gather(-1, idx[..., None])[..., 0]  # (B, T): the logit of the token that was read
        repeats = float((z.argmax(-1) == idx).double().mean())
        if repeats > 0.5:  # measured with N(0, 1) tied embeddings: 93-100% of positions
            others = z[~F.one_hot(idx, v).bool()]  # every other token's logit
            hint = msg(
                "your fresh GPT predicts the token it just read at {share} of the positions: that "
                "token's own logit is {own} on average (d_model = {d}), the others spread "
                "by {spread}. With large embeddings tied to the output layer, "
                "the last hidden state is mostly the input token's embedding, and its dot product with itself "
                "is its squared norm, about d_model for N(0, 1) entries. Initialize the weights small, as "
                "GPT-2 does: nn.init.normal_(std=0.02) for the embeddings and Linear weights, zero biases",
                share=f"{repeats:.0%}",
                own=f"{float(own.mean()):.1f}",
                d=d,
                spread=f"{float(others.std()):.1f}",
            )
        else:
            hint = N_(
                "initialize the weights small, as GPT-2 does: nn.init.normal_(std=0.02) for the embeddings and "
                "Linear weights, zero biases: then every logit starts near 0 and every prediction near uniform"
            )
        raise CheckFailure(
            msg("a fresh GPT should predict (nearly) the uniform distribution.")
            + got_expected(
                msg("loss {loss} on random tokens", loss=f"{loss:.3f}"),
                msg(
                    "ln V = ln {v} = {ln_v} (within {margin})",
                    v=v,
                    ln_v=f"{math.log(v):.3f}",
                    margin=INIT_MARGIN,
                ),
            )
            + hint_line(hint)
        )
    _init_stats_judge(out.get("stats"), case.facts["n"])


# ---------------------------------------------------------------------------------------------
# sample_next: deterministic cases, and frequencies of many seeded draws

N_DRAWS = 20000
SIGMAS = 6.0  # a frequency within 6 standard deviations of its probability (false alarm < 1e-8)


def _sample_specs(hidden):
    # (name, logits row (V,), temperature, top_k, dtype)
    base = torch.tensor([1.2, -0.3, 0.5, 2.0, -1.0, 0.9, 0.0, 1.6])
    specs = [
        ("greedy", None, 0.0, None, torch.float32),
        ("top1", None, 1.7, 1, torch.float64),
        ("dist", base, 0.5, None, torch.float32),
        ("dist", base, 2.0, None, torch.float64),
        ("dist", base, 1.0, 3, torch.float32),
        ("dist", base, None, None, torch.float64),  # temperature left out: the default, 1.0
    ]
    if hidden:
        base2 = torch.tensor([0.3, 2.2, -0.7, 1.1, 1.9, -2.0, 0.8, 0.2, 1.4, -0.1, 0.6])
        specs += [
            ("greedy", None, 0.0, 5, torch.float64),
            ("dist", base2, 0.7, 4, torch.float64),
            ("dist", base2, 1.5, None, torch.float32),
            ("dist", base2 * 2, 1.0, 2, torch.float32),
        ]
    return specs


def _sample_cases(hidden):
    cases = []
    for i, (kind, row, temp, top_k, dt) in enumerate(_sample_specs(hidden)):
        g = gen(7600 + 17 * i + (900 if hidden else 0))
        kw = dict(temperature=temp, top_k=top_k) if temp is not None else dict(top_k=top_k)
        if kind != "dist":
            logits = rand(5, 13, generator=g, mean=0.5, std=2.0).to(dt)  # (B, V)
            cases.append(
                Case(
                    msg(
                        "logits {shape} {dtype}, temperature={temperature}, top_k={top_k}",
                        shape=tuple(logits.shape),
                        dtype=dt,
                        temperature=temp,
                        top_k=top_k,
                    ),
                    [
                        let("logits", logits),
                        new("g", "torch.Generator"),
                        call("_", ref("g", "manual_seed"), 5 + i),
                        call("out", "sample_next", ref("logits"), generator=ref("g"), **kw),
                        call("out2", "sample_next", ref("logits"), generator=ref("g"), **kw),
                    ],
                    ["out", "out2", "logits"],
                    facts=dict(kind=kind, logits=logits, **kw),
                    # top_k=1 after the frequency cases: a top-k that keeps k - 1 logits keeps none
                    # here and raises, and the frequencies name that mistake
                    size=logits.numel() + (10**5 if top_k == 1 else 0),
                )
            )
            continue
        logits = row.to(dt)[None, :].expand(N_DRAWS, -1).contiguous()  # the same row, N_DRAWS times
        seed_ = 100 + i + (900 if hidden else 0)
        shown = f"temperature={temp}" if temp is not None else N_("temperature left out (default 1.0)")
        cases.append(
            Case(
                msg(
                    "logits {shape} {dtype}: {n} copies of the row {row}, {temperature}, top_k={top_k}, "
                    "generator seeded {seed}",
                    shape=(N_DRAWS, row.numel()),
                    dtype=dt,
                    n=N_DRAWS,
                    row=[round(x, 2) for x in row.tolist()],
                    temperature=shown,
                    top_k=top_k,
                    seed=seed_,
                ),
                [
                    let("logits", logits),
                    new("g", "torch.Generator"),
                    call("_", ref("g", "manual_seed"), seed_),
                    call("out", "sample_next", ref("logits"), generator=ref("g"), **kw),
                    call("_", ref("g", "manual_seed"), seed_),
                    call("again", "sample_next", ref("logits"), generator=ref("g"), **kw),
                ],
                ["out", "again"],
                facts=dict(
                    kind=kind,
                    row=row.to(F64),
                    temperature=1.0 if temp is None else temp,
                    top_k=top_k,
                    default=temp is None,
                ),
                size=1000 + row.numel(),
            )
        )
    return cases


def sampling_probs(row, temperature, top_k, after_softmax=False, multiply=False, smallest=False, renorm=True):
    """The distribution sample_next should draw from (float64), or that of a classic mistake."""
    row = row.to(F64)
    keep = torch.ones_like(row, dtype=torch.bool)
    if top_k is not None:
        keep = torch.zeros_like(keep)
        keep[row.topk(top_k, largest=not smallest).indices] = True
    if after_softmax:
        p = torch.softmax(row, -1)  # p / T, then renormalized by the sampler: T has no effect
    else:
        p = torch.softmax(row * temperature if multiply else row / temperature, -1)
    p = torch.where(keep, p, torch.zeros_like(p))
    return p / p.sum() if renorm else p


def _expect_samples(got, b, what):
    if isinstance(got, torch.Tensor) and tuple(got.shape) == (b, 1):
        raise CheckFailure(
            msg("{what} has the wrong shape.", what=what)
            + got_expected(tuple(got.shape), (b,))
            + hint_line(N_("torch.multinomial(probs, 1) gives (B, 1): take [:, 0] (or .squeeze(-1))"))
        )
    got = expect_tensor(got, what, shape=(b,))
    if got.dtype != torch.int64:
        raise CheckFailure(
            msg("{what} should be token ids.", what=what)
            + got_expected(got.dtype, N_("torch.int64 (a LongTensor)"))
        )
    return got


SAMPLE_DEFAULT = N_(
    "the default temperature should be 1.0: sample_next(logits, temperature=1.0, top_k=None, generator=None) "
    "draws from softmax(logits) when called without a temperature"
)


def _sample_judge(case, out):
    f = case.facts
    temp, top_k = f["temperature"], f["top_k"]
    if f["kind"] != "dist":
        logits = f["logits"]
        got = _expect_samples(out["out"], logits.shape[0], "sample_next")
        exp = logits.argmax(-1)
        if not torch.equal(got, exp):
            why = (
                N_("temperature 0 means greedy: return logits.argmax(-1) (dividing by 0 is not defined)")
                if temp == 0
                else N_(
                    "top_k=1 keeps only the largest logit, so every draw is logits.argmax(-1): set the other "
                    "logits to -inf before the softmax (0 still gives them probability)"
                )
            )
            if top_k == 1 and torch.equal(got, logits.argmin(-1)):
                why = N_("your top-k keeps the smallest logits: keep the k largest (torch.topk(logits, k))")
            raise CheckFailure(
                msg("sample_next is not deterministic here.")
                + got_expected(got.tolist(), exp.tolist())
                + hint_line(why)
            )
        if not torch.equal(out["out2"], exp):
            raise CheckFailure(
                msg("sample_next gave a different answer the second time on a deterministic input")
            )
        if not torch.equal(out["logits"], logits):
            raise CheckFailure(
                msg("{who} modified its input {name} in place", who="sample_next", name="logits")
            )
        return
    row = f["row"]
    v = row.numel()
    got = _expect_samples(out["out"], N_DRAWS, "sample_next")
    if got.min() < 0 or got.max() >= v:
        raise CheckFailure(
            msg("sample_next returned ids outside the vocabulary [0, {v}).", v=v)
            + LINE
            + msg(
                "got:      {got}",
                got=msg("min {low}, max {high}", low=int(got.min()), high=int(got.max())),
            )
            + hint_line(
                N_(
                    "sample one index of the last dim per row (the top-k indices "
                    "must be mapped back to vocabulary ids with gather)"
                )
            )
        )
    again = _expect_samples(out["again"], N_DRAWS, "sample_next")
    if not torch.equal(got, again):
        raise CheckFailure(
            msg("sample_next gave different draws with the same seeded generator: it does not use it.")
            + hint_line(N_("pass generator=generator to torch.multinomial (or to torch.rand)"))
        )
    freq = torch.bincount(got, minlength=v).to(F64) / N_DRAWS
    exp = sampling_probs(row, temp, top_k)

    def fits(p):
        sd = torch.sqrt(p * (1 - p) / N_DRAWS)
        return bool(((freq - p).abs() <= SIGMAS * sd + 1e-12).all())

    if fits(exp):
        return
    mistakes = []
    if f.get("default"):  # called without a temperature
        greedy = F.one_hot(row.argmax(), v).to(F64)
        mistakes += [
            (SAMPLE_DEFAULT, p)
            for p in [greedy] + [sampling_probs(row, t, top_k) for t in (0.5, 2.0, 0.7, 1.5)]
        ]
    mistakes += [
        (
            N_(
                "the temperature is applied after the softmax (or not at all): softmax(logits) / T renormalizes "
                "to softmax(logits). Divide the logits: softmax(logits / T)"
            ),
            sampling_probs(row, temp, top_k, after_softmax=True),
        ),
        (
            N_(
                "the logits are multiplied by the temperature: divide them, softmax(logits / T) (a high T "
                "flattens the distribution)"
            ),
            sampling_probs(row, temp, top_k, multiply=True),
        ),
    ]
    if top_k is not None:
        mistakes += [
            (
                N_("your top-k keeps the k smallest logits: keep the k largest, torch.topk(logits, k)"),
                sampling_probs(row, temp, top_k, smallest=True),
            ),
            (
                N_("top-k is not applied: only the k largest logits may ever be drawn"),
                sampling_probs(row, temp, None),
            ),
        ]
        if top_k > 1:
            mistakes.append(
                (
                    msg(
                        "your top-k keeps only k - 1 = {k} logits: the k-th largest must stay too. "
                        "Mask the logits strictly below the k-th largest (logits < kth, not <=)",
                        k=top_k - 1,
                    ),
                    sampling_probs(row, temp, top_k - 1),
                )
            )
    hint = next((h for h, p in mistakes if fits(p)), "")
    if not hint and top_k is not None:
        kept = exp > 0
        outside = [i for i in range(v) if not kept[i] and freq[i] > 0]
        p_raw = sampling_probs(row, temp, top_k, renorm=False)
        best = int(p_raw.argmax())
        if outside:
            hint = msg(
                "tokens outside the top {k} were drawn ({tokens}): set the other logits to -inf "
                "before the softmax (setting them to 0 still gives them probability)",
                k=top_k,
                tokens=outside,
            )
        elif abs(freq[best] - p_raw[best]) <= SIGMAS * math.sqrt(p_raw[best] * (1 - p_raw[best]) / N_DRAWS):
            hint = N_(
                "your top-k probabilities are not renormalized: the kept tokens must be drawn with "
                "p_i / (sum of the kept p), so they sum to 1 (softmax over the k kept logits only)"
            )
    raise CheckFailure(
        msg("sample_next draws with the wrong frequencies ({n} draws).", n=N_DRAWS)
        + got_expected(
            [round(x, 3) for x in freq.tolist()],
            msg(
                "{probs} (each within {sigmas} standard deviations)",
                probs=[round(x, 3) for x in exp.tolist()],
                sigmas=f"{SIGMAS:g}",
            ),
        )
        + hint_line(
            hint
            or N_(
                "probs = softmax(logits / temperature) over the kept (top-k) logits, then torch.multinomial"
            )
        )
    )


# ---------------------------------------------------------------------------------------------
# generate (with the student's GPT, in float64: greedy decoding has no near-ties to round)


def ref_generate(s, idx, n_new, h, use_cache=True, mode="ok", act="gelu"):
    """Greedy decoding with the float64 reference GPT; `mode` recomputes a classic mistake:
    "first_position" (samples from logits[:, 0]), "full_with_cache" (feeds the whole sequence again
    with the cache), "last_token_only" (feeds only the last token, without the cache)."""
    out, cache = idx.clone(), None
    for _ in range(n_new):
        if mode == "last_token_only":
            logits, _ = ref_gpt(s, out[:, -1:], h, act=act)
        elif mode == "full_with_cache":
            logits, cache = ref_gpt(s, out, h, cache, act=act)
        elif use_cache:
            logits, cache = ref_gpt(s, out if cache is None else out[:, -1:], h, cache, act=act)
        else:
            logits, _ = ref_gpt(s, out, h, act=act)
        nxt = (logits[:, 0] if mode == "first_position" else logits[:, -1]).argmax(-1)  # (B,)
        out = torch.cat([out, nxt[:, None]], dim=1)
    return out


def _gen_specs(hidden):
    # (B, T0, max_new, vocab, d_model, n_heads, n_layers, max_len, temperature, top_k, use_cache)
    if not hidden:
        return [
            (2, 4, 1, 11, 12, 3, 1, 8, 0.0, None, True),  # one new token: ids out of the vocabulary show
            (2, 3, 5, 11, 12, 3, 2, 26, 0.0, None, True),
            (3, 4, 4, 9, 8, 2, 1, 9, 0.0, None, False),
            (2, 2, 5, 13, 12, 2, 2, 21, 1.3, 1, True),
            (3, 3, 6, 10, 8, 2, 1, 34, 1.0, None, True),
            (4, 3, 6, 10, 8, 2, 1, 12, None, None, None),  # temperature, top_k, use_cache left out
        ]
    # max_len leaves room for the positions that feeding the whole sequence with the cache would use
    return [
        (4, 5, 8, 17, 16, 4, 2, 70, 0.0, None, True),
        (2, 1, 9, 12, 16, 4, 2, 46, 0.0, None, True),
        (3, 6, 6, 15, 12, 3, 3, 13, 0.8, 1, False),
        (4, 2, 10, 20, 16, 2, 2, 66, 0.9, 5, True),
    ]


GENERATE_DEFAULTS = dict(temperature=1.0, top_k=None, use_cache=True)  # generate's signature
GENERATE_DEFAULT_HINT = N_(
    "the signature's defaults are temperature=1.0, top_k=None, use_cache=True: generate(model, idx, "
    "max_new_tokens) must do what generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, "
    "use_cache=True) does"
)
GENERATE_OUTPUT = N_("generate's output")
MAX_RECORDED = 200  # calls of the model recorded per generate (the cases need at most 10)


def record_generate(generate, model, idx, max_new_tokens, **kwargs):
    """Run the student's `generate` with `model` whose forward records each call, and report raw
    facts: (tokens, calls), one row per call of the model: [tokens fed (T), T_past of the kv_cache
    passed (-1: none, -2: unreadable), grad mode on (0/1), logits part of an autograd graph (0/1)].
    It runs where the student's code lives; the judge decides from these numbers alone."""
    calls = []
    forward = model.forward

    def recording(*args, **kw):
        x = args[0] if args else kw.get("idx")
        cache = args[1] if len(args) > 1 else kw.get("kv_cache")
        try:
            t_past = -1 if cache is None else int(cache[0][0].shape[2])
        except Exception:  # noqa: BLE001 - a cache of another layout: reported as unreadable
            t_past = -2
        t = int(x.shape[1]) if isinstance(x, torch.Tensor) and x.dim() == 2 else -1
        grad_on = torch.is_grad_enabled()
        result = forward(*args, **kw)
        logits = result[0] if isinstance(result, (tuple, list)) and len(result) else result
        graph = isinstance(logits, torch.Tensor) and logits.requires_grad
        if len(calls) < MAX_RECORDED:
            calls.append([t, t_past, int(grad_on), int(graph)])
        return result

    model.forward = recording  # an instance attribute: model(...) and model.forward(...) both record
    try:
        out = generate(model, idx, max_new_tokens, **kwargs)
    finally:
        del model.forward
    return out, calls


def _gen_cases(hidden):
    cases = []
    for i, (b, t0, n_new, v, d, h, n, max_len, temp, top_k, use_cache) in enumerate(_gen_specs(hidden)):
        g = gen(7700 + 23 * i + (900 if hidden else 0))
        s = gpt_state(v, d, n, max_len, g, F64)
        s = {k: (t * 0.6 if k == "tok_emb.weight" or k == "head.weight" else t) for k, t in s.items()}
        idx = torch.randint(0, v, (b, t0), generator=g)
        default = temp is None  # the signature's defaults, compared with them given explicitly
        kw = {} if default else dict(temperature=temp, top_k=top_k, use_cache=use_cache)
        explicit = GENERATE_DEFAULTS if default else kw
        use_cache = True if default else use_cache
        sampled = default or (temp > 0 and top_k != 1)
        steps = [new("model", "GPT", v, d, h, n, max_len, state=s, dtype=F64), let("idx", idx)]
        outputs = ["out", "idx"]
        record = helper("decoder.record_generate")  # what each step feeds the model, with grad on or off
        if sampled:
            steps += [
                new("g", "torch.Generator"),
                call("_", ref("g", "manual_seed"), 11 + i),
                call(
                    "out",
                    record,
                    graded("generate"),
                    ref("model"),
                    ref("idx"),
                    n_new,
                    generator=ref("g"),
                    **kw,
                ),
                call("_", ref("g", "manual_seed"), 11 + i),
                call("again", "generate", ref("model"), ref("idx"), n_new, generator=ref("g"), **explicit)
                if not default
                else call(
                    "again",
                    record,
                    graded("generate"),
                    ref("model"),
                    ref("idx"),
                    n_new,
                    generator=ref("g"),
                    **explicit,
                ),
            ]
            outputs.append("again")
        else:
            steps.append(call("out", record, graded("generate"), ref("model"), ref("idx"), n_new, **kw))
        called = (
            f"generate(GPT(vocab_size={v}, d_model={d}, n_heads={h}, n_layers={n}, max_len={max_len}) "
            f"(float64), idx {tuple(idx.shape)}, max_new_tokens={n_new}"
        )
        shown = f"temperature={temp}, top_k={top_k}, use_cache={use_cache}"
        if default:  # sampled too
            label = msg(
                "{call}, temperature, top_k and use_cache left out (defaults 1.0, None, True), generator seeded",
                call=called,
            )
        elif sampled:
            label = msg("{call}, {options}, generator seeded", call=called, options=shown)
        else:
            label = called + ", " + shown  # code only
        cases.append(
            Case(
                label,
                steps,
                outputs,
                facts=dict(
                    s=s, idx=idx, n_new=n_new, h=h, v=v, sampled=sampled, use_cache=use_cache, default=default
                ),
                size=b * (t0 + n_new) * d * n,
            )
        )
    return cases


def _judge_calls(calls, t0, n_new, use_cache, default=False):
    """What each call of the model was fed: with the cache, the prompt and then one token per step,
    each with the cache of everything before it; without, the whole sequence so far; never with grad."""
    if not isinstance(calls, (list, tuple)) or not all(
        isinstance(c, (list, tuple)) and len(c) == 4 and all(isinstance(x, int) for x in c) for c in calls
    ):
        raise CheckFailure(
            msg("generate's calls of the model could not be read back: {got}", got=f"{calls!r:.80}")
        )
    graph = [i for i, c in enumerate(calls) if c[2] or c[3]]
    if graph:
        raise CheckFailure(
            msg(
                "generate ran the model with gradients on: its logits carry an autograd graph, so every step "
                "keeps its activations for a backward that never comes."
            )
            + got_expected(
                msg("grad mode on at calls {calls} of {n}", calls=graph[:8], n=len(calls)),
                N_("grad mode off at every call"),
            )
            + hint_line(N_("run the loop under torch.no_grad() (or decorate generate with @torch.no_grad())"))
        )
    fed = [[c[0], c[1]] for c in calls]
    if use_cache:
        want = [[t0, -1]] + [[1, t0 + i] for i in range(n_new - 1)]
    else:
        want = [[t0 + i, -1] for i in range(n_new)]
    if fed == want:
        return
    if default and fed == [[t0 + i, -1] for i in range(n_new)]:
        hint = GENERATE_DEFAULT_HINT
    elif use_cache and fed == [[t0 + i, -1] for i in range(n_new)]:
        hint = N_(
            "your generate never uses the cache: every step fed the whole sequence again without a "
            "kv_cache. With use_cache=True, feed the prompt once, then only the new token, out[:, -1:], "
            "with kv_cache=cache from the step before"
        )
    elif use_cache and [c[0] for c in fed] == [t0 + i for i in range(n_new)] and any(c[1] > 0 for c in fed):
        hint = N_(
            "with the cache, feed only the new token: you passed the whole sequence again together with the "
            "cache, so the cached positions are counted twice"
        )
    elif fed and all(c == [1, -1] for c in fed):
        hint = N_(
            "your model sees only the last token: pass the cache back in (kv_cache=cache), or, without the "
            "cache, the whole sequence so far"
        )
    elif not use_cache and fed == [[t0, -1]] + [[1, t0 + i] for i in range(n_new - 1)]:
        hint = N_(
            "your generate uses the cache even with use_cache=False: without it, every step runs the model "
            "on the whole sequence so far, with no kv_cache (the run the cached one is compared with)"
        )
    else:
        hint = N_(
            "with use_cache=True, the first call feeds the prompt (no cache), each later call one token with "
            "the cache of all the tokens before it; with use_cache=False, every call feeds the whole "
            "sequence so far, no cache; one call per new token"
        )
    raise CheckFailure(
        msg(
            "generate fed the model other inputs than expected ([tokens fed, cached positions], -1 for no "
            "cache, one pair per call of the model)."
        )
        + got_expected(
            f"{fed[:12]}{' ...' if len(fed) > 12 else ''}", f"{want[:12]}{' ...' if len(want) > 12 else ''}"
        )
        + hint_line(hint)
    )


def _gen_judge(case, out):
    f = case.facts
    s, idx, n_new, h, v = f["s"], f["idx"], f["n_new"], f["h"], f["v"]
    b, t0 = idx.shape
    recorded = out["out"]
    if not isinstance(recorded, (tuple, list)) or len(recorded) != 2:
        raise CheckFailure(msg("generate's output could not be read back: {got}", got=f"{recorded!r:.80}"))
    got, calls = recorded
    got = expect_tensor(got, GENERATE_OUTPUT, shape=(b, t0 + n_new))
    if got.dtype != torch.int64:
        raise CheckFailure(msg("generate should return token ids.") + got_expected(got.dtype, "torch.int64"))
    if not torch.equal(got[:, :t0], idx):
        raise CheckFailure(
            msg("generate's output should start with the prompt idx, then the new tokens.")
            + got_expected(got[0].tolist(), msg("{prompt} + {n} new tokens", prompt=idx[0].tolist(), n=n_new))
        )
    if not torch.equal(out["idx"], idx):
        raise CheckFailure(
            msg(
                "{who} modified its input {name} in place: {advice}",
                who="generate",
                name="idx",
                advice=N_("build a new tensor with torch.cat"),
            )
        )
    if got.min() < 0 or got.max() >= v:
        raise CheckFailure(
            msg("generate produced ids outside the vocabulary [0, {v}).", v=v)
            + LINE
            + msg("got:      {got}", got=got[0].tolist())
            + hint_line(
                N_(
                    "you sampled from the logits of every position, (B, T * V) or (B * T, V): take the last "
                    "position's logits, logits[:, -1, :] (B, V)"
                )
            )
        )
    if f.get("default"):  # "again": the same call with the defaults given explicitly, recorded too
        explicit = out["again"]
        if not isinstance(explicit, (tuple, list)) or len(explicit) != 2:
            raise CheckFailure(
                msg("generate's output could not be read back: {got}", got=f"{explicit!r:.80}")
            )
        again, calls_again = explicit
        _judge_calls(calls_again, t0, n_new, True)  # its own mistakes are named first
        _judge_calls(calls, t0, n_new, True, default=True)
        again = expect_tensor(again, GENERATE_OUTPUT, shape=got.shape)
        if not torch.equal(got, again):
            raise CheckFailure(
                msg(
                    "generate called without temperature, top_k and use_cache gave other tokens than with "
                    "temperature=1.0, top_k=None, use_cache=True (the same seeded generator)."
                )
                + got_expected(got[0].tolist(), again[0].tolist())
                + hint_line(GENERATE_DEFAULT_HINT)
            )
        return
    if f["sampled"]:
        if not torch.equal(got, out["again"]):
            raise CheckFailure(
                msg(
                    "generate gave different tokens with the same seeded generator: pass generator= on to "
                    "sample_next (and temperature, top_k)"
                )
            )
        _judge_calls(calls, t0, n_new, f["use_cache"])
        return
    exp = ref_generate(s, idx, n_new, h, f["use_cache"])
    if torch.equal(got, exp) or torch.equal(
        got, ref_generate(s, idx, n_new, h, f["use_cache"], act="gelu_tanh")
    ):
        _judge_calls(calls, t0, n_new, f["use_cache"])
        return
    mistakes = [
        (
            N_(
                "your generate samples from the first position's logits: the next token comes from the last "
                "position, logits[:, -1, :]"
            ),
            "first_position",
        ),
        (
            N_(
                "with the cache, feed only the new token: you passed the whole sequence again together with the "
                "cache, so the cached positions are counted twice"
            ),
            "full_with_cache",
        ),
        (
            N_(
                "your model sees only the last token: pass the cache back in (kv_cache=cache), or, without the "
                "cache, the whole sequence so far"
            ),
            "last_token_only",
        ),
    ]
    hint = ""
    for text, mode in mistakes:
        try:
            if torch.equal(got, ref_generate(s, idx, n_new, h, f["use_cache"], mode)):
                hint = text
                break
        except Exception:  # noqa: BLE001 - a mistake the reference cannot even run
            continue
    raise CheckFailure(
        msg("generate with greedy decoding (temperature 0 or top_k=1) gave other tokens than the reference.")
        + got_expected(got[0].tolist(), exp[0].tolist())
        + hint_line(
            hint
            or N_(
                "at each step: logits of the last position -> sample_next(..., temperature, top_k, generator) "
                "-> append; with use_cache, feed only the new token and the cache the model returned"
            )
        )
    )


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("shift_targets", _shift_cases, _shift_judge),
    Question("CausalSelfAttention", _attn_cases, _attn_judge),
    Question("GPT", _gpt_cases, _gpt_judge, needs=("CausalSelfAttention",)),
    Question("GPT_init", _init_cases, _init_judge, needs=("GPT",)),
    Question("sample_next", _sample_cases, _sample_judge),
    Question("generate", _gen_cases, _gen_judge, needs=("GPT", "sample_next")),
)

check = _core.lesson_check(QUESTIONS, "CausalSelfAttention", devices=False)
