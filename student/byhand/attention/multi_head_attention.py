"""Lesson 01_attention, `MultiHeadAttention`: its cases, its reference, its mistakes and its judge."""

from __future__ import annotations

import math

import torch

from .. import _judge
from .._core import Case, call, gen, got_expected, hint_line, let, new, rand, ref
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import ref_causal_mask, ref_merge_heads, ref_sdpa, ref_split_heads

# the earlier answers its forward may call: the reference of each when the student's fails its own check
EARLIER = ("scaled_dot_product_attention", "split_heads", "merge_heads")

# ---------------------------------------------------------------------------------------------
# MultiHeadAttention


def _mha_state(d, bias, g):
    state = {}
    for name in ("w_q", "w_k", "w_v", "w_o"):
        state[f"{name}.weight"] = rand(d, d, generator=g, std=1 / math.sqrt(d) * 1.5)
        if bias:
            state[f"{name}.bias"] = rand(d, generator=g, mean=0.2, std=0.5)
    return state


def ref_mha(state, h, query, key, value, mask=None, scale_dim=None, head_aligned=False):
    """nn.MultiheadAttention(batch_first) with the same weights, in float64. Mistake models:
    `scale_dim` (scores scaled by 1/sqrt(scale_dim)), `head_aligned` (a (B, Lq, Lk) mask given no
    head dim, so it broadcasts against (B, H, Lq, Lk) as (1, B, Lq, Lk): one mask per head)."""
    d = query.shape[-1]
    bias = "w_q.bias" in state
    mha = torch.nn.MultiheadAttention(d, h, bias=bias, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([state[f"w_{n}.weight"] for n in "qkv"]))
        mha.out_proj.weight.copy_(state["w_o.weight"])
        if bias:
            mha.in_proj_bias.copy_(torch.cat([state[f"w_{n}.bias"] for n in "qkv"]))
            mha.out_proj.bias.copy_(state["w_o.bias"])
    if scale_dim is not None or head_aligned:
        return _manual_mha(state, h, query, key, value, mask, scale_dim or d // h, head_aligned)
    attn_mask = None
    if mask is not None:
        attn_mask = ~mask  # torch: True = masked out
        if attn_mask.dim() == 3:
            attn_mask = attn_mask.repeat_interleave(h, dim=0)  # (B*H, Lq, Lk)
    with torch.no_grad():
        y, _ = mha(query.double(), key.double(), value.double(), attn_mask=attn_mask, need_weights=False)
    return y


def _manual_mha(state, h, query, key, value, mask, scale_dim, head_aligned=False):
    def lin(x, n):
        return x.double() @ state[f"{n}.weight"].double().T + (
            state[f"{n}.bias"].double() if f"{n}.bias" in state else 0
        )

    q, k, v = (ref_split_heads(lin(t, n), h) for t, n in ((query, "w_q"), (key, "w_k"), (value, "w_v")))
    m = None if mask is None else (mask if mask.dim() == 2 or head_aligned else mask[:, None])
    o, _ = ref_sdpa(q, k, v, m, scale=1 / math.sqrt(scale_dim))
    return lin(ref_merge_heads(o), "w_o")


def _mha_cases(hidden):
    # (B, Lq, Lk, d_model, n_heads, bias, mask kind, dtype)
    specs = [
        (2, 5, 5, 12, 3, True, None, torch.float32),
        (3, 4, 6, 16, 4, False, "2d", torch.float64),
        (2, 6, 6, 8, 2, True, "causal", torch.float32),
        (2, 3, 5, 8, 2, True, "3d", torch.float64),  # one mask per sequence, as the hidden cases send
    ]
    if hidden:
        specs = [
            (4, 7, 9, 24, 4, True, "3d", torch.float64),
            (3, 8, 8, 30, 5, True, "causal", torch.float32),
            (2, 3, 10, 32, 8, False, None, torch.float64),
        ]
    cases = []
    for i, (b, lq, lk, d, h, bias, mk, dt) in enumerate(specs):
        g = gen(7000 + 97 * i + 13 * d + (500 if hidden else 0))
        state = {k: v.to(dt) for k, v in _mha_state(d, bias, g).items()}
        query = rand(b, lq, d, dtype=dt, mean=0.5, std=2.0, generator=g)
        key = (
            query
            if lq == lk and mk == "causal"
            else rand(b, lk, d, dtype=dt, mean=-0.5, std=1.5, generator=g)
        )
        value = key if key is query else rand(b, lk, d, dtype=dt, mean=1.0, std=1.0, generator=g)
        mask = None
        if mk == "causal":
            mask = ref_causal_mask(lq)
        elif mk == "2d":
            mask = torch.rand(lq, lk, generator=g) > 0.3
            mask[:, 0] = True
        elif mk == "3d":
            mask = torch.rand(b, lq, lk, generator=g) > 0.3
            mask[..., 0] = True
        steps = [
            new("mha", "MultiHeadAttention", d, h, bias=bias, state=state, dtype=dt),
            let("query", query),
            let("key", key),
            let("value", value),
        ]
        args = [ref("query"), ref("key"), ref("value")]
        outputs = ["y", "query", "key", "value"]  # the inputs too: the caller's, left as they were
        if i == 0:  # the signature's default: MultiHeadAttention(d_model, n_heads) has biases
            steps.append(new("fresh", "MultiHeadAttention", d, h))
            outputs += ["fresh.w_q.bias", "fresh.w_o.bias"]
        if mask is not None:
            steps += [
                let("mask", mask),
                call("y", ref("mha"), *args, mask=ref("mask")),
                call("y_nomask", ref("mha"), *args),  # a probe: does the mask change anything?
            ]
            outputs += ["y_nomask", "mask"]
        else:
            steps.append(call("y", ref("mha"), *args))
        label = msg(
            "{module}, query {query}, key {key}, {dtype}, mask={mask}",
            module=f"MultiHeadAttention(d_model={d}, n_heads={h}, bias={bias})",
            query=str(tuple(query.shape)),
            key=str(tuple(key.shape)),
            dtype=str(dt),
            mask=(
                N_("causal")
                if mk == "causal"
                else N_("a 3-d mask (B, Lq, Lk), one per sequence")
                if mk == "3d"
                else str(mk)
            ),
        )
        cases.append(
            Case(
                label,
                steps,
                outputs,
                facts=dict(state=state, h=h, query=query, key=key, value=value, mask=mask),
                size=b * lq * lk * d,
            )
        )
    return cases


MHA_OUTPUT = msg("{name} output", name="MultiHeadAttention")


def _mha_judge(case, out):
    f = case.facts
    d = f["query"].shape[-1]
    for name in ("fresh.w_q.bias", "fresh.w_o.bias"):
        if name in out and not (isinstance(out[name], torch.Tensor) and tuple(out[name].shape) == (d,)):
            raise CheckFailure(
                msg("MultiHeadAttention(d_model, n_heads), called without bias, has no biases.")
                + got_expected(
                    f"{name[len('fresh.') :]} = {out[name]!r:.40}", msg("a bias of shape ({d},)", d=str(d))
                )
                + hint_line(
                    N_(
                        "the signature's default is bias=True: __init__(self, d_model, n_heads, bias=True), "
                        "and each nn.Linear gets bias=bias"
                    )
                )
            )
    exp = ref_mha(f["state"], f["h"], f["query"], f["key"], f["value"], f["mask"])
    y = expect_tensor(out["y"], MHA_OUTPUT, shape=exp.shape)
    hint = diagnose(
        y,
        [
            (
                N_(
                    "the scores are scaled by sqrt(d_model); each head has d_head = d_model / n_heads "
                    "dims, so scale by sqrt(d_head)"
                ),
                lambda: ref_mha(f["state"], f["h"], f["query"], f["key"], f["value"], f["mask"], scale_dim=d),
            ),
            (
                N_(
                    "a (B, Lq, Lk) mask was given no head dim, so it lines up with the heads instead of the "
                    "sequences (sequence b's mask went to head b): mask[:, None] makes it (B, 1, Lq, Lk), one "
                    "mask per sequence shared by its heads"
                ),
                lambda: ref_mha(
                    f["state"], f["h"], f["query"], f["key"], f["value"], f["mask"], head_aligned=True
                ),
            ),
        ],
    )
    if not hint and f["mask"] is not None and not _judge.close(y.double(), exp, rtol=1e-4, atol=1e-4):
        y0 = out.get("y_nomask")
        exp0 = ref_mha(f["state"], f["h"], f["query"], f["key"], f["value"], None)
        if isinstance(y0, torch.Tensor) and y0.shape == y.shape and torch.equal(y0, y):
            if not _judge.close(exp0, exp, rtol=1e-4, atol=1e-4):
                hint = N_(
                    "your MultiHeadAttention ignores its mask argument: its output is the same with the mask "
                    "and without it. Pass mask on to scaled_dot_product_attention (unsqueeze a (B, Lq, Lk) mask "
                    "to (B, 1, Lq, Lk) so it is shared by all heads)"
                )
    assert_close(
        y.double(),
        exp,
        MHA_OUTPUT,
        hint
        or N_(
            "compare step by step: project with w_q/w_k/w_v, split_heads, attention per head, "
            "merge_heads, then w_o"
        ),
        rtol=1e-4 if y.dtype == torch.float32 else 1e-7,
        atol=1e-4 if y.dtype == torch.float32 else 1e-9,
    )
    _inputs_unchanged(out, f)


def _inputs_unchanged(out, f):
    """The caller's query, key, value and mask, as they were: an answer that reshapes or fills the
    mask in place (mask.unsqueeze_(1) for a (B, Lq, Lk) mask) changes what the caller holds."""
    for name in ("query", "key", "value", "mask"):
        if name not in out or f[name] is None:
            continue
        got, given = out[name], f[name]
        if isinstance(got, torch.Tensor) and _judge.close(got, given):
            continue
        if not isinstance(got, torch.Tensor) or got.shape != given.shape:
            now = msg("{name} is {what} after the call", name=name, what=_judge.type_of(got))
        else:
            changed = int((got.to(torch.float64) != given.to(torch.float64)).sum())
            now = msg(
                "{name} changed at {n} of its {total} entries", name=name, n=changed, total=given.numel()
            )
        raise CheckFailure(
            msg("MultiHeadAttention modified its input {name} in place.", name=name)
            + got_expected(
                now,
                msg(
                    "{name} as the caller gave it: a tensor of shape {shape}",
                    name=name,
                    shape=tuple(given.shape),
                ),
            )
            + hint_line(
                N_(
                    "build a new mask instead of changing the caller's: mask[:, None] or mask.unsqueeze(1), "
                    "not mask.unsqueeze_(1); mask.masked_fill(...) or mask & other, not mask.masked_fill_(...) "
                    "or mask &= other"
                )
                if name == "mask"
                else _judge.OUT_OF_PLACE
            )
        )
