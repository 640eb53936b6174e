"""exercise: moe_forward
kind: wrong
output buffer torch.zeros(T, d): float32 whatever x's dtype"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    y = torch.zeros(x.shape[0], x.shape[1])
    for e, f in enumerate(experts):
        tok, slot = torch.where(chosen == e)
        if len(tok):
            y.index_add_(0, tok, (f(x[tok]) * weights[tok, slot, None]).to(y.dtype))
    return y
