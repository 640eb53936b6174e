"""exercise: moe_forward
kind: wrong
adds the residual x to the output (dropped tokens pass through, in the wrong place)"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    y = x.clone()
    flat = chosen.reshape(-1)
    wflat = weights.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=len(experts)).tolist()
    for e, idx in enumerate(order.split(counts)):
        if len(idx):
            tok = idx // k
            y.index_add_(0, tok, experts[e](x[tok]) * wflat[idx, None])
    return y
