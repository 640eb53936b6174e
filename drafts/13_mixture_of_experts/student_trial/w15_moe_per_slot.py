"""exercise: moe_forward
kind: wrong
loops over the k slots and then experts: each expert called up to k times"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    y = torch.zeros_like(x)
    for j in range(k):
        for e, f in enumerate(experts):
            tok = torch.nonzero(chosen[:, j] == e).flatten()
            if len(tok):
                y.index_add_(0, tok, f(x[tok]) * weights[tok, j, None])
    return y
