"""flash_attention_backward: its cases, the autograd reference (`ref_backward`), FlashAttention-2's
blocked backward with its classic mistakes (`blocked_backward`), their hints, and its judge (the
gradients' part is FlashAttention's too)."""

from __future__ import annotations

import math

import torch

from .. import _judge
from .._core import Case, got_expected, hint_line, rand
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import (
    SIGNATURES,
    SKIP_LIMIT,
    _drawn,
    _facts,
    _flops_of_dense,
    _label,
    _observed,
    _options,
    _pair,
    _tols,
    _unchanged,
    judge_default_blocks,
    judge_flops_seen,
    judge_memory,
    ref_forward,
)


def ref_backward(q, k, v, do, is_causal=False):
    """Autograd through lesson 01's attention, float64."""
    xs = [t.detach().double().requires_grad_(True) for t in (q, k, v)]
    o, _ = ref_forward(*xs, is_causal)
    return torch.autograd.grad(o, xs, do.double())


def blocked_backward(q, k, v, do, is_causal, bq, bk, mistake=None):
    """FlashAttention-2's backward, float64, with one classic mistake (a model for the hints)."""
    q, k, v, do = q.double(), k.double(), v.double(), do.double()
    d = q.shape[-1]
    scale = 1 / math.sqrt(d)
    o, lse = ref_forward(q, k, v, is_causal)
    lq, lk = q.shape[-2], k.shape[-2]
    big_d = (do * o).sum(-1)  # (..., Lq)
    if mistake == "d_from_o":
        big_d = o.sum(-1)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for j0 in range(0, lk, bk):
        j1 = min(j0 + bk, lk)
        for i0 in range(0, lq, bq):
            i1 = min(i0 + bq, lq)
            if is_causal and j0 > i1 - 1:
                continue
            if is_causal and mistake == "skip_partial_q" and i0 < j0:
                continue
            s = q[..., i0:i1, :] @ k[..., j0:j1, :].transpose(-2, -1) * scale
            if is_causal and mistake != "causal_unmasked":
                allowed = torch.arange(j0, j1)[None, :] <= torch.arange(i0, i1)[:, None]
                s = s.masked_fill(~allowed, -math.inf)
            if mistake == "local_softmax":
                p = torch.softmax(s, -1)
            else:
                p = torch.exp(s - lse[..., i0:i1, None])
            dv[..., j0:j1, :] += p.transpose(-2, -1) @ do[..., i0:i1, :]
            dp = do[..., i0:i1, :] @ v[..., j0:j1, :].transpose(-2, -1)
            dd = big_d[..., i0:i1, None]
            if mistake == "d_from_dp_block":
                dd = (p * dp).sum(-1, keepdim=True)
            ds = p * dp if mistake == "no_d" else p * (dp - dd)
            s_bwd = 1.0 if mistake == "no_scale_bwd" else scale
            dq[..., i0:i1, :] += ds @ k[..., j0:j1, :] * s_bwd
            dk[..., j0:j1, :] += ds.transpose(-2, -1) @ q[..., i0:i1, :] * s_bwd
    return dq, dk, dv


_BWD_MISTAKES = [
    (
        "d_from_dp_block",
        N_(
            "D is computed from dp inside each block (rowsum(p * dp) over one key block only): the softmax "
            "term needs the sum over the whole row, which is D = rowsum(do * o), computed once before the loop"
        ),
    ),
    ("no_d", N_("dS = P * dP misses the softmax term: dS = P * (dP - D) with D = rowsum(do * o)")),
    ("d_from_o", N_("D is rowsum(o): it is rowsum(do * o), the upstream gradient times the output")),
    (
        "local_softmax",
        N_(
            "the probabilities are rebuilt with a softmax inside each block: each block holds only part of "
            "the row; rebuild them from the saved log-sum-exp, P = exp(S - lse)"
        ),
    ),
    ("no_scale_bwd", N_("dq and dk miss the scale: dq = dS k / sqrt(d), dk = dS^T q / sqrt(d)")),
    (
        "skip_partial_q",
        N_(
            "the backward pass skips a query block that sees the key block: the query block that holds query j0 "
            "may start before j0 (block_q != block_k); start the query loop at (j0 // block_q) * block_q"
        ),
    ),
    (
        "causal_unmasked",
        N_(
            "the causal mask is missing in the backward pass: the diagonal blocks must mask key > query "
            "when P is rebuilt, as the forward did"
        ),
    ),
]


# ---------------------------------------------------------------------------------------------
# flash_attention_backward

_BWD_SPECS = [
    ((2,), 8, 12, 4, 3, False, 4, 4, torch.float64, ""),
    ((), 9, 11, 4, 3, False, 4, 3, torch.float64, ""),  # no leading dims
    ((2, 1, 2), 6, 6, 4, 4, True, 3, 2, torch.float32, ""),
    ((2, 3), 10, 10, 4, 5, True, 4, 4, torch.float32, ""),
    ((3,), 7, 13, 5, 6, False, 3, 4, torch.float64, ""),
    ((2,), 13, 13, 6, 4, True, 4, 3, torch.float64, ""),  # causal, ragged, block_k < block_q
    ((2,), 14, 14, 5, 3, True, 3, 5, torch.float32, ""),  # causal, ragged, block_k > block_q
    ((2,), 12, 10, 16, 4, False, 4, 3, torch.float64, "large"),
    ((2,), 64, 64, 8, 8, True, 8, 8, torch.float32, ""),  # 8 blocks a side: skipping is measured
    ((2,), 100, 100, 8, 8, False, 16, 16, torch.float32, ""),
    ((2,), 90, 90, 8, 8, False, None, None, torch.float32, "default"),
]
_BWD_HIDDEN = [
    ((2, 2), 11, 11, 6, 4, True, 4, 3, torch.float64, ""),
    ((), 12, 7, 5, 4, False, 5, 3, torch.float32, ""),
    ((1, 2, 2), 7, 7, 4, 3, True, 2, 3, torch.float64, ""),
    ((4,), 9, 17, 8, 7, False, 8, 5, torch.float32, ""),
    ((3,), 17, 17, 4, 5, True, 5, 7, torch.float64, ""),
    ((2, 2), 13, 13, 16, 5, True, 3, 4, torch.float64, "large"),
    ((2,), 96, 96, 8, 8, True, 16, 16, torch.float64, ""),
    ((1, 2), 130, 90, 8, 8, False, 32, 16, torch.float32, ""),
    ((3,), 120, 120, 6, 6, False, None, None, torch.float64, "default"),
]


def _bwd_cases(hidden):
    cases = []
    for (lead, lq, _, _, dv, causal, bq, bk, dt, kind), g, (q, k, v) in _drawn(
        _BWD_HIDDEN if hidden else _BWD_SPECS, 10500, 43, hidden
    ):
        do = rand(*lead, lq, dv, dtype=dt, mean=0.3, std=1.0, generator=g)
        o, lse = ref_forward(q, k, v, causal)
        o, lse = o.to(dt), lse.to(dt)
        inputs = dict(q=q, k=k, v=v, o=o, lse=lse, do=do)
        steps = _observed("flash_attention_backward", inputs, **_options(causal, bq, bk, kind))
        cases.append(
            Case(
                msg(
                    "{label}, o and lse of the forward, do {shape} (mean 0.3)",
                    label=_label(q, k, v, causal, bq, bk, dt, kind),
                    shape=tuple(do.shape),
                ),
                steps,
                ["r", "q", "k", "v", "o", "lse", "do"],
                facts=_facts(q, k, v, causal, bq or 64, bk or 64, do=do, o=o, lse=lse, kind=kind),
                size=q.numel() + k.numel(),
            )
        )
    return cases


def _bwd_default_causal_hint(got, i, f, rtol, atol) -> str:
    if f.get("kind") != "default" or f["lq"] != f["lk"]:
        return ""
    causal = ref_backward(f["q"], f["k"], f["v"], f["do"], True)[i]
    if not _judge.close(got, causal.to(got.dtype), rtol, atol):
        return ""
    return msg(
        "is_causal should default to False: {signature}", signature=SIGNATURES["flash_attention_backward"]
    )


def _bwd_overflow_hint(got, f) -> str:
    if f.get("kind") != "large" or bool(torch.isfinite(got.double()).all()):
        return ""
    return msg(
        "a gradient has NaN or inf on large scores: exp(S) overflows; rebuild P = exp(S - lse) in one "
        "exponential, never exp(S) / exp(lse)"
    )


def _judge_grads(grads, f, who, models=None):
    q, k, v, do, causal = f["q"], f["k"], f["v"], f["do"], f["is_causal"]
    exp = ref_backward(q, k, v, do, causal)
    hints = dict(_BWD_MISTAKES)
    cache = {}

    def model(key):
        if key not in cache:
            cache[key] = blocked_backward(q, k, v, do, causal, f["bq"], f["bk"], key)
        return cache[key]

    for i, name in sorted(enumerate(("dq", "dk", "dv")), key=lambda t: -t[0]):  # dv first: it needs no dS
        what = msg("{name} from {who}", name=name, who=who)
        got = expect_tensor(grads[i], what, shape=exp[i].shape)
        _judge.expect_dtype(got, q.dtype, what)
        rtol, atol = _tols(exp[i], q.dtype)
        hint = _bwd_default_causal_hint(got, i, f, rtol, atol)
        hint = hint or diagnose(got, [(hints[key], lambda key=key: model(key)[i]) for key in hints])
        hint = hint or _bwd_overflow_hint(got, f)
        assert_close(
            got,
            exp[i].to(q.dtype),
            what,
            hint
            or msg(
                "per block: P = exp(S - lse); dv += P^T do; dP = do v^T; dS = P * (dP - D) with "
                "D = rowsum(do * o); dq += dS k / sqrt(d); dk += dS^T q / sqrt(d)"
            ),
            rtol=rtol,
            atol=atol,
        )


def _bwd_judge(case, out):
    f = case.facts
    who = "flash_attention_backward"
    grads, seen = _pair(out["r"], who, ("dq", "dk", "dv"))
    _judge_grads(grads, f, who)
    _unchanged(out, f, ("q", "k", "v", "o", "lse", "do"), who)
    judge_default_blocks(f, seen, who)
    judge_memory(f, seen, who)
    q, v = f["q"], f["v"]
    dense = 2 * f["heads"] * f["lq"] * f["lk"] * (3 * q.shape[-1] + 2 * v.shape[-1])
    judge_flops_seen(f, seen[1], dense // 2 if f["is_causal"] else dense, who)
    if f["is_causal"] and f["lq"] >= 4 * f["bq"] and seen[1] > SKIP_LIMIT * dense:
        raise CheckFailure(
            msg("{who} computes the blocks above the diagonal.", who=who)
            + got_expected(
                _flops_of_dense(seen[1], dense),
                msg(
                    "at most {n} ({ratio} of the dense {dense})",
                    n=int(SKIP_LIMIT * dense),
                    ratio=SKIP_LIMIT,
                    dense=dense,
                ),
            )
            + hint_line(
                msg(
                    "the backward pass masks the blocks above the diagonal instead of skipping them: "
                    "for key block [j0, j1), start the query loop at the block that holds query j0"
                )
            )
        )
