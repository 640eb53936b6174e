"""exercise: moe_forward
kind: right
sorts assignments, concatenates expert outputs, one index_add at the end"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    flat = chosen.flatten()
    order = flat.argsort(stable=True)
    tokens = order // k
    counts = torch.bincount(flat, minlength=len(experts))
    xs = x[tokens].split(counts.tolist())
    outs = [experts[e](xs[e]) for e in range(len(experts)) if counts[e] > 0]
    out = torch.cat(outs) * weights.flatten()[order, None]
    return torch.zeros_like(x).index_add(0, tokens, out)
