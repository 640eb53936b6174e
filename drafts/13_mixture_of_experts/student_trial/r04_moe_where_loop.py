"""exercise: moe_forward
kind: right
loop over experts with torch.where, indexed +="""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    y = torch.zeros_like(x)
    for e, f in enumerate(experts):
        tok, slot = torch.where(chosen == e)
        if tok.numel() == 0:
            continue
        y[tok] += f(x[tok]) * weights[tok, slot].unsqueeze(-1)
    return y
