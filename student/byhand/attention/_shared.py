"""Lesson 01_attention: the references its exercises share (float64, computed in the judge's process)."""

from __future__ import annotations

import math

import torch

# ---------------------------------------------------------------------------------------------
# References (float64, computed in the judge's process)


def ref_weights(q, k, mask=None, scale=None, softmax_dim=-1, masked_value=-math.inf):
    q, k = q.double(), k.double()
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale  # (..., Lq, Lk)
    if mask is not None:
        scores = scores.masked_fill(~mask, masked_value)
    w = torch.softmax(scores, dim=softmax_dim)
    return torch.nan_to_num(w, nan=0.0)  # fully masked row -> 0


def ref_sdpa(q, k, v, mask=None, **mistake):
    w = ref_weights(q, k, mask, **mistake)
    return w @ v.double(), w


def ref_causal_mask(n):
    return torch.tril(torch.ones(n, n, dtype=torch.bool))


def ref_split_heads(x, h):
    b, seq, d = x.shape
    return x.view(b, seq, h, d // h).transpose(1, 2)  # (B, L, H, dh) -> (B, H, L, dh)


def ref_merge_heads(x):
    b, h, seq, dh = x.shape
    return x.transpose(1, 2).reshape(b, seq, h * dh)


# ---------------------------------------------------------------------------------------------
# The reference answers, in the inputs' dtype: put in place of a student's answer that fails its own
# check while a later question's cases run (byhand._depends)


def reference_sdpa(q, k, v, mask=None):
    out, w = ref_sdpa(q, k, v, mask)
    return out.to(q.dtype), w.to(q.dtype)


def reference_split_heads(x, n_heads):
    b, seq, d = x.shape
    return x.reshape(b, seq, n_heads, d // n_heads).transpose(1, 2)


def reference_merge_heads(x):
    return ref_merge_heads(x)
