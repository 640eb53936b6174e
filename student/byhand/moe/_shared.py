"""What lesson 13's exercises share: the float64 references (the router, the per-token MoE loop,
the capacity rule, the two auxiliary losses), each with options that reproduce a catalogued
mistake; the inputs; the tolerances and the comparison that names the mistake an answer equals."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .. import _judge
from .._core import got_expected, hint_line, rand
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg

F64 = torch.float64


def tols(dtype, expected):
    scale = max(1.0, float(expected.abs().max())) if expected.numel() else 1.0
    return (2e-4, 2e-5 * scale) if dtype != F64 else (1e-7, 1e-9 * scale)


def compare(got, exp, dtype, what, mistakes, generic):
    """Shape, dtype, then the numbers; the hint names the mistake the answer equals, else `generic`."""
    if exp.dim() == 0 and isinstance(got, torch.Tensor) and got.numel() == 1 and got.dim() > 0:
        raise CheckFailure(
            msg("{what} has the wrong shape.", what=what)
            + got_expected(tuple(got.shape), "()")
            + hint_line(
                N_(
                    "return a scalar, a 0-dim tensor: .mean() or .sum() over everything gives one (no keepdim, no reshape)"
                )
            )
        )
    got = expect_tensor(got, what, shape=exp.shape)
    _judge.expect_dtype(got, dtype, what)
    rtol, atol = tols(dtype, exp)
    g = got.to(F64)
    assert_close(
        g, exp, what, diagnose(g, telling(mistakes, exp, rtol, atol)) or generic, rtol=rtol, atol=atol
    )


def telling(mistakes, exp, rtol, atol):
    """The mistakes whose output differs from `exp` on this case at the check's own tolerance: one
    that gives the expected output here (renormalising when normalize=True) is not what an answer
    that fails did, so it must not be named. (At `diagnose`'s looser tolerance the square of the
    mean would go too: at logits near 800 it is within 1e-3 of the mean of the squares.)"""
    out = []
    for hint, compute in mistakes:
        try:
            if _judge.mismatch(compute().to(F64), exp, rtol, atol) <= 1.0:
                continue
        except Exception:
            pass
        out.append((hint, compute))
    return out


# ---------------------------------------------------------------------------------------------
# Inputs


def integer_inputs(t, d, e, g, dtype):
    """x (T, d) and w_gate (d, E) of small integers: the logits are exact integers in any summation
    order, so equal logits (ties) are equal in every answer's arithmetic."""
    x = torch.randint(-2, 3, (t, d), generator=g).to(dtype)
    w = torch.randint(-1, 2, (d, e), generator=g).to(dtype)
    return x, w


def real_inputs(t, d, e, g, dtype):
    x = rand(t, d, dtype=dtype, mean=0.3, std=1.7, generator=g)
    w = rand(d, e, dtype=dtype, mean=0.05, std=0.9 / math.sqrt(d), generator=g)
    return x, w


# ---------------------------------------------------------------------------------------------
# The router


def ref_probs(x, w_gate, dim=-1):
    return torch.softmax(x.to(F64) @ w_gate.to(F64), dim=dim)  # (T, d) x (d, E) -> (T, E)


def ref_route(
    x, w_gate, k, normalize=True, ties="low", renorm=None, after_topk=False, by_index=False, dim=-1
):
    """(weights (T, k) float64, experts (T, k) long). Options reproduce mistakes: ties "high" (toward
    the higher index), renorm forced True/False whatever `normalize`, after_topk (softmax over the
    k chosen logits), by_index (the k experts listed by index, not by probability), dim 0 (softmax
    over the tokens)."""
    logits = x.to(F64) @ w_gate.to(F64)  # (T, E)
    probs = torch.softmax(logits, dim=dim)
    e = probs.shape[-1]
    if ties == "low":
        top = torch.sort(probs, dim=-1, descending=True, stable=True)
        experts = top.indices[:, :k]
    else:  # reverse the experts, sort stably, map back: equal values keep the higher index first
        top = torch.sort(probs.flip(-1), dim=-1, descending=True, stable=True)
        experts = (e - 1) - top.indices[:, :k]
    if by_index:
        experts = experts.sort(dim=-1).values
    weights = probs.gather(-1, experts)
    if after_topk:
        weights = torch.softmax(logits.gather(-1, experts), dim=-1)
    if normalize if renorm is None else renorm:
        weights = weights / weights.sum(-1, keepdim=True)
    return weights, experts


# ---------------------------------------------------------------------------------------------
# The experts of moe_forward's cases: (n, d) -> (n, d), not zero at zero (a bias), not linear


def expert_state(d, h, e, g, dtype):
    """Per expert: w_in (d, h), b_in (h,), w_out (h, d)."""
    return [
        (
            rand(d, h, dtype=dtype, std=1.2 / math.sqrt(d), generator=g),
            rand(h, dtype=dtype, mean=0.4, std=0.5, generator=g),
            rand(h, d, dtype=dtype, std=1.0 / math.sqrt(h), generator=g),
        )
        for _ in range(e)
    ]


def ref_expert(state, x):
    w_in, b_in, w_out = (t.to(F64) for t in state)
    return F.silu(x.to(F64) @ w_in + b_in) @ w_out  # (n, d) x (d, h) -> (n, h) -> (n, d)


def ref_moe(x, w_gate, states, k, normalize=True, weight_inside=False, unweighted=False, **route_opts):
    """The per-token loop, the definition: y_t = sum over its k experts of w * expert(x_t)."""
    weights, chosen = ref_route(x, w_gate, k, normalize, **route_opts)
    x = x.to(F64)
    y = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(k):
            w, s = weights[t, j], states[int(chosen[t, j])]
            if weight_inside:
                y[t] += ref_expert(s, w * x[t : t + 1])[0]
            elif unweighted:
                y[t] += ref_expert(s, x[t : t + 1])[0]
            else:
                y[t] += w * ref_expert(s, x[t : t + 1])[0]
    return y


# ---------------------------------------------------------------------------------------------
# Capacity


def ref_capacity(n_tokens, n_experts, k, factor, rounding="ceil", with_k=True):
    value = factor * (k if with_k else 1) * n_tokens / n_experts
    return {"ceil": math.ceil, "floor": math.floor, "round": round}[rounding](value)


def ref_keep(weights, experts, n_experts, capacity, order="tokens", strict=True, count_self=False):
    """(T, k) bool. order "tokens" (the rule), "reversed" (the last tokens kept), "weights" (the
    largest weights kept); strict False keeps capacity + 1; count_self counts the assignment itself
    among those before it (keeps capacity - 1)."""
    t, k = experts.shape
    flat = experts.reshape(-1).tolist()
    w = weights.reshape(-1).to(F64).tolist()
    idx = list(range(t * k))
    if order == "reversed":
        idx = idx[::-1]
    elif order == "weights":
        idx = sorted(idx, key=lambda i: (-w[i], i))
    seen = [0] * n_experts
    kept = [False] * (t * k)
    for i in idx:
        before = seen[flat[i]] + (1 if count_self else 0)
        kept[i] = before < capacity if strict else before <= capacity
        seen[flat[i]] += 1
    return torch.tensor(kept).reshape(t, k)


# ---------------------------------------------------------------------------------------------
# The losses


def ref_balance(probs, experts, n_experts, f_from="counts", per="Tk", factor=True):
    """E * sum_i f_i P_i in float64. f_from "probs" (f = P), "counts_raw" (counts, not fractions);
    per "T" divides the counts by T (k times the rule); factor False drops the E."""
    p = probs.to(F64)
    counts = torch.bincount(experts.reshape(-1), minlength=n_experts).to(F64)
    f = {
        "counts": counts / (experts.numel() if per == "Tk" else experts.shape[0]),
        "counts_raw": counts,
        "probs": p.mean(0),
    }[f_from]
    loss = (f * p.mean(0)).sum()
    return loss * n_experts if factor else loss


def balance_grad(probs, experts, n_experts):
    """d loss / d router_probs: E * f_i / T in every row (f has no gradient)."""
    t = probs.shape[0]
    counts = torch.bincount(experts.reshape(-1), minlength=n_experts).to(F64)
    f = counts / experts.numel()
    return (n_experts * f / t).expand(t, n_experts).clone()


def ref_z(logits, square=True, reduce="mean", dim=-1, outer=False):
    lse = torch.logsumexp(logits.to(F64), dim=dim)
    if outer:
        return lse.mean() ** 2
    val = lse**2 if square else lse
    return val.mean() if reduce == "mean" else val.sum()
