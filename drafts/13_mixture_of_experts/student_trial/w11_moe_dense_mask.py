"""exercise: moe_forward
kind: wrong
every expert on every token, output masked by the routing weights"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    y = torch.zeros_like(x)
    for e, f in enumerate(experts):
        w_e = (weights * (chosen == e)).sum(-1, keepdim=True)
        y = y + w_e * f(x)
    return y
