"""exercise: moe_forward
kind: wrong
expert outputs added without their routing weights"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    y = torch.zeros_like(x)
    flat = chosen.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=len(experts)).tolist()
    for e, idx in enumerate(order.split(counts)):
        if len(idx):
            tok = idx // k
            y.index_add_(0, tok, experts[e](x[tok]))
    return y
