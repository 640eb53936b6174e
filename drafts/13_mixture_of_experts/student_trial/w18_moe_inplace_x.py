"""exercise: moe_forward
kind: wrong
accumulates into x in place (index_add_ on the input)"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    flat = chosen.reshape(-1)
    wflat = weights.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=len(experts)).tolist()
    outs = []
    for e, idx in enumerate(order.split(counts)):
        if len(idx):
            tok = idx // k
            outs.append((tok, experts[e](x[tok]) * wflat[idx, None]))
    x.zero_()
    for tok, out in outs:
        x.index_add_(0, tok, out)
    return x
