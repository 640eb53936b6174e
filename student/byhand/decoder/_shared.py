"""What several of lesson 07_decoder's exercises share: the float64 references of causal
self-attention and of the GPT (CausalSelfAttention's, GPT's and generate's cases and judges run
them), the weights they are built from, and the comparisons of an output and of a KV cache."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .. import _judge
from .._core import got_expected, hint_line, rand
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg

F64 = torch.float64
CACHED = 10**6  # cases that use a KV cache are judged after those that do not


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


# ---------------------------------------------------------------------------------------------
# The reference answers, as the answer cells define them: put in place of a student's answer that
# fails its own check, while a later question's cases run (byhand._depends)


class ReferenceCausalSelfAttention(torch.nn.Module):
    """The contract's CausalSelfAttention (docs/api/07_decoder.md)."""

    # where the mask's positions are made: on x's device (None); a device, to simulate the mistake of
    # making them without device=x.device
    positions_on = None

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = torch.nn.Linear(d_model, 3 * d_model)
        self.proj = torch.nn.Linear(d_model, d_model)

    def forward(self, x, kv_cache=None):
        b, t, d = x.shape
        h = self.n_heads
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in self.qkv(x).split(d, dim=-1))
        if kv_cache is not None:
            k, v = torch.cat([kv_cache[0], k], dim=2), torch.cat([kv_cache[1], v], dim=2)
        t_past = k.shape[2] - t
        on = x.device if self.positions_on is None else self.positions_on
        allowed = (
            torch.arange(k.shape[2], device=on)[None, :]
            <= torch.arange(t_past, t_past + t, device=on)[:, None]
        )
        scores = (q @ k.transpose(-2, -1) / math.sqrt(d // h)).masked_fill(~allowed, -math.inf)
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y), (k, v)


class _ReferenceBlock(torch.nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d_model)
        self.attn = ReferenceCausalSelfAttention(d_model, n_heads)
        self.ln2 = torch.nn.LayerNorm(d_model)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(d_model, 4 * d_model), torch.nn.GELU(), torch.nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x, kv_cache=None):
        a, cache = self.attn(self.ln1(x), kv_cache)
        x = x + a
        return x + self.mlp(self.ln2(x)), cache


class ReferenceGPT(torch.nn.Module):
    """The contract's GPT, initialized as GPT-2 (std 0.02, residual projections scaled)."""

    def __init__(self, vocab_size, d_model, n_heads, n_layers, max_len):
        super().__init__()
        self.tok_emb = torch.nn.Embedding(vocab_size, d_model)
        self.pos_emb = torch.nn.Embedding(max_len, d_model)
        self.blocks = torch.nn.ModuleList([_ReferenceBlock(d_model, n_heads) for _ in range(n_layers)])
        self.ln_f = torch.nn.LayerNorm(d_model)
        self.head = torch.nn.Linear(d_model, vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight
        for name, p in self.named_parameters():
            if p.dim() == 2:
                scaled = name.endswith(("attn.proj.weight", "mlp.2.weight"))
                torch.nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layers) if scaled else 0.02)
            elif name.endswith("bias"):
                torch.nn.init.zeros_(p)

    def forward(self, idx, kv_cache=None):
        t_past = 0 if kv_cache is None else kv_cache[0][0].shape[2]
        pos = torch.arange(t_past, t_past + idx.shape[1], device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        caches = []
        for i, block in enumerate(self.blocks):
            x, c = block(x, None if kv_cache is None else kv_cache[i])
            caches.append(c)
        return self.head(self.ln_f(x)), caches


def reference_sample_next(logits, temperature=1.0, top_k=None, generator=None):
    """The contract's sample_next: (B, V) logits -> (B,) token ids."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, -math.inf)
    probs = torch.softmax(logits.double(), dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
