"""flash_attention_forward: its cases, the blocked online-softmax model of its classic mistakes
(`blocked_forward`), their hints, and its judge."""

from __future__ import annotations

import math

import torch

from .. import _judge
from .._core import Case
from .._judge import assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import (
    _default_causal_hint,
    _drawn,
    _facts,
    _label,
    _observed,
    _options,
    _pair,
    _tols,
    _unchanged,
    causal_mask,
    judge_default_blocks,
    judge_flops_seen,
    judge_memory,
    ref_forward,
)


def blocked_forward(q, k, v, is_causal, bq, bk, mistake=None):
    """The online softmax, block by block, float64; `mistake` makes one classic mistake."""
    q, k, v = q.double(), k.double(), v.double()
    lq, lk, d = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = {"no_scale": 1.0, "scale_twice": 1 / d}.get(mistake, 1 / math.sqrt(d))
    lead = q.shape[:-2]
    o = torch.zeros(*lead, lq, v.shape[-1], dtype=torch.float64)
    lse = torch.zeros(*lead, lq, dtype=torch.float64)
    q_end = lq - lq % bq if mistake == "ragged_queries" and lq % bq else lq
    k_end = lk - lk % bk if mistake == "ragged_keys" and lk % bk else lk
    for i0 in range(0, q_end, bq):
        i1 = min(i0 + bq, lq)
        m = torch.full((*lead, i1 - i0), -math.inf, dtype=torch.float64)
        l_ = torch.zeros((*lead, i1 - i0), dtype=torch.float64)
        acc = torch.zeros((*lead, i1 - i0, v.shape[-1]), dtype=torch.float64)
        for j0 in range(0, k_end, bk):
            j1 = min(j0 + bk, lk)
            if is_causal and j0 > i1 - 1:
                continue
            if is_causal and mistake == "skip_after_i0" and j0 > i0:
                continue
            if is_causal and mistake == "skip_from_last" and j0 >= i1 - 1:
                continue
            diagonal = is_causal and j1 - 1 > i0
            if mistake == "diag_skipped" and diagonal:
                continue
            s = q[..., i0:i1, :] @ k[..., j0:j1, :].transpose(-2, -1) * scale
            if diagonal and mistake != "diag_unmasked":
                rows = torch.arange(i0, i1)[:, None]
                cols = torch.arange(j0, j1)[None, :]
                allowed = cols < rows if mistake == "diag_strict" else cols <= rows
                s = s.masked_fill(~allowed, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            p = torch.exp(s - m_new[..., None])
            alpha = torch.exp(m - m_new)
            alpha = torch.nan_to_num(alpha, nan=0.0)
            p = torch.nan_to_num(p, nan=0.0)
            if mistake == "l_twice":
                l_ = l_ * alpha * alpha + p.sum(-1)
            else:
                l_ = l_ * alpha + p.sum(-1)
            if mistake == "no_rescale_o":
                acc = acc + p @ v[..., j0:j1, :]
            else:
                acc = acc * alpha[..., None] + p @ v[..., j0:j1, :]
            m = m_new
        o[..., i0:i1, :] = acc / l_[..., None]
        lse[..., i0:i1] = torch.log(l_) if mistake == "lse_no_max" else m + torch.log(l_)
    return o, lse


_FWD_MISTAKES = [
    (
        "no_rescale_o",
        N_(
            "the running max is not used to rescale the accumulated output: when a block raises the max "
            "from m to m_new, multiply the output accumulated so far by exp(m - m_new), as the normaliser l is"
        ),
    ),
    (
        "l_twice",
        N_(
            "the normaliser l is rescaled twice: l_new = exp(m - m_new) * l + rowsum(p), one factor exp(m - m_new)"
        ),
    ),
    (
        "lse_no_max",
        N_("lse is returned without the max: the running sum l holds exp(s - m), so lse = m + log(l)"),
    ),
    (
        "diag_skipped",
        N_(
            "the causal diagonal block is skipped: the blocks that cross the diagonal hold the keys 0..i that "
            "query i sees (its own key included); process them with the entries above the diagonal masked"
        ),
    ),
    (
        "diag_strict",
        N_(
            "the causal diagonal block is fully masked on its diagonal: query i sees key i too, mask key > query, not key >= query"
        ),
    ),
    (
        "diag_unmasked",
        N_(
            "the causal diagonal block is not masked: a block that crosses the diagonal holds keys after the "
            "query; mask the entries with key position > query position inside it"
        ),
    ),
    ("no_scale", N_("the scores miss the scale 1/sqrt(d): s = q k^T / sqrt(d)")),
    ("scale_twice", N_("the scale is applied twice (scores divided by d): s = q k^T / sqrt(d), once")),
    (
        "skip_after_i0",
        N_(
            "a key block that crosses the diagonal is skipped: the key loop stops at the query block's first query "
            "i0, but its queries run to i1 - 1 and see keys up to i1 - 1; loop j0 over range(0, i1, block_k) "
            "(with block_k != block_q a key block can start inside the query block)"
        ),
    ),
    (
        "skip_from_last",
        N_(
            "a key block that crosses the diagonal is skipped: the key block that starts at the query block's "
            "last query i1 - 1 holds its own key; loop j0 over range(0, i1, block_k), not range(0, i1 - 1, block_k)"
        ),
    ),
    (
        "ragged_keys",
        N_(
            "the last key block is dropped when block_k does not divide Lk: the last block is shorter, "
            "k[..., j0:j0 + block_k, :] is fine with j0 running over range(0, Lk, block_k)"
        ),
    ),
    (
        "ragged_queries",
        N_(
            "the last query block is dropped when block_q does not divide Lq: loop i0 over "
            "range(0, Lq, block_q); the last block is shorter"
        ),
    ),
]


# (leading dims, Lq, Lk, d, d_v, is_causal, block_q, block_k (None: the defaults), dtype, kind); kind
# "large": scores large enough that exp overflows without the running max; "default": is_causal and
# the block sizes not given. The hidden cases repeat each kind with other data and sizes.
_FWD_SPECS = [
    ((2,), 8, 12, 4, 3, False, 4, 4, torch.float64, ""),
    ((), 9, 11, 4, 3, False, 4, 3, torch.float64, ""),  # no leading dims: q (Lq, d)
    ((2, 1, 2), 6, 6, 4, 4, True, 3, 2, torch.float32, ""),
    ((2, 3), 10, 10, 4, 5, True, 4, 4, torch.float32, ""),
    ((3,), 7, 13, 5, 6, False, 3, 4, torch.float32, ""),  # ragged: neither block divides
    ((2,), 13, 13, 6, 4, True, 4, 3, torch.float64, ""),  # causal, ragged, block_k < block_q
    ((2,), 14, 14, 5, 3, True, 3, 5, torch.float32, ""),  # causal, ragged, block_k > block_q
    ((2,), 12, 10, 16, 4, False, 4, 3, torch.float64, "large"),
    ((2,), 11, 11, 8, 4, True, 4, 3, torch.float32, "large"),
    ((2, 2), 100, 100, 8, 8, False, 16, 16, torch.float32, ""),  # large enough to see the L x L matrix
    ((2,), 100, 100, 8, 8, False, None, None, torch.float32, "default"),
]
_FWD_HIDDEN = [
    ((2, 2), 11, 11, 6, 4, True, 4, 3, torch.float64, ""),
    ((), 12, 7, 5, 4, False, 5, 3, torch.float32, ""),
    ((1, 2, 2), 7, 7, 4, 3, True, 2, 3, torch.float64, ""),
    ((4,), 9, 17, 8, 7, False, 8, 5, torch.float64, ""),
    ((3,), 17, 17, 4, 5, True, 5, 7, torch.float32, ""),
    ((2, 3), 10, 13, 16, 5, False, 3, 5, torch.float64, "large"),
    ((3,), 13, 13, 8, 6, True, 5, 4, torch.float64, "large"),
    ((2,), 96, 96, 8, 8, True, 16, 16, torch.float64, ""),
    ((1, 2), 130, 90, 8, 8, False, 32, 16, torch.float32, ""),
    ((3,), 120, 120, 6, 6, False, None, None, torch.float64, "default"),
]


def _fwd_cases(hidden):
    cases = []
    for (_, _, _, _, _, causal, bq, bk, dt, kind), _, (q, k, v) in _drawn(
        _FWD_HIDDEN if hidden else _FWD_SPECS, 10100, 37, hidden
    ):
        steps = _observed("flash_attention_forward", dict(q=q, k=k, v=v), **_options(causal, bq, bk, kind))
        facts = _facts(q, k, v, causal, bq or 64, bk or 64, kind=kind)
        label = _label(q, k, v, causal, bq, bk, dt, kind)
        cases.append(Case(label, steps, ["r", "q", "k", "v"], facts=facts, size=q.numel() + k.numel()))
    return cases


def _ragged_rows_hint(got, exp, facts, rtol, atol):
    """Rows wrong only in the last (shorter) query block: that block was dropped."""
    lq, bq = facts["lq"], facts["bq"]
    if lq % bq == 0 or got.shape != exp.shape:
        return ""
    g, e = got.double(), exp.double()
    bad = ~torch.isclose(g, e, rtol=rtol, atol=atol).reshape(*g.shape[:-2], lq, -1).all(-1)
    bad_rows = bad.reshape(-1, lq).any(0)
    start = lq - lq % bq
    if bool(bad_rows[start:].all()) and not bool(bad_rows[:start].any()):
        return dict(_FWD_MISTAKES)["ragged_queries"]
    return ""


NO_MAX = N_(
    "exp(S) overflows on large scores: subtract the running max before exponentiating, m_new = max(m, "
    "rowmax(S)), p = exp(S - m_new), and rescale l and the output by exp(m - m_new)"
)
MAX_FROM_ZERO = N_(
    "on the rows whose scores are all large and negative every exp(S - m) underflows to 0 and l = 0: the "
    "running max starts at 0 instead of -inf; start it at -inf (torch.full(..., -math.inf))"
)


def _overflow_hint(got, facts) -> str:
    """NaN or inf where the answer should be finite (scores of about +-1000): the running max is
    missing (every row is hit) or starts at 0 (exactly the rows whose scores are all negative)."""
    if facts.get("kind") != "large":
        return ""
    bad = ~torch.isfinite(got.double())
    if got.dim() == facts["q"].dim():
        bad = bad.any(-1)  # o (..., Lq, d_v): a row per query; lse (..., Lq) already is
    if not bool(bad.any()):
        return ""
    q, k = facts["q"].double(), facts["k"].double()
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if facts["is_causal"]:
        s = s.masked_fill(~causal_mask(s.shape[-2], s.shape[-1]), -math.inf)
    negative = s.amax(-1) < 0  # (..., Lq)
    if bad.shape != negative.shape:
        return ""
    if bool(bad.all()):  # every exp overflows or underflows: no max at all
        return NO_MAX
    return MAX_FROM_ZERO if torch.equal(bad, negative) else ""


def _fwd_judge(case, out):
    f = case.facts
    q, k, v, causal, bq, bk = f["q"], f["k"], f["v"], f["is_causal"], f["bq"], f["bk"]
    who = "flash_attention_forward"
    (o, lse), seen = _pair(out["r"], who, ("o", "lse"))
    o_exp, lse_exp = ref_forward(q, k, v, causal)
    o = expect_tensor(o, "o", shape=o_exp.shape)
    lse = expect_tensor(lse, "lse", shape=lse_exp.shape)
    _judge.expect_dtype(o, q.dtype, "o")
    hints = dict(_FWD_MISTAKES)
    models = {}

    def model(key):
        if key not in models:
            models[key] = blocked_forward(q, k, v, causal, bq, bk, key)
        return models[key]

    rtol, atol = _tols(o_exp, q.dtype)
    hint = _default_causal_hint(o, f, rtol, atol) or _ragged_rows_hint(o, o_exp, f, rtol, atol)
    hint = hint or diagnose(o, [(hints[key], lambda key=key: model(key)[0]) for key in hints])
    hint = hint or _overflow_hint(o, f)
    expected = msg("o = softmax(q k^T / sqrt(d)) v, computed with the running max m and normaliser l")
    assert_close(o, o_exp.to(o.dtype), msg("o (the attention output)"), hint or expected, rtol, atol)
    hint = diagnose(lse, [(hints[key], lambda key=key: model(key)[1]) for key in hints])
    hint = hint or _overflow_hint(lse, f)
    what = msg("lse (the log-sum-exp of each row of scaled scores)")
    expected = msg("lse = m + log(l), the running max plus the log of the normaliser, per query")
    assert_close(lse, lse_exp.to(lse.dtype), what, hint or expected, *_tols(lse_exp, q.dtype))
    _unchanged(out, f, ("q", "k", "v"), who)
    judge_default_blocks(f, seen, who)
    judge_memory(f, seen, who)
    need = 2 * f["heads"] * f["lq"] * f["lk"] * (q.shape[-1] + v.shape[-1])
    judge_flops_seen(f, seen[1], need // 2 if causal else need, who)
