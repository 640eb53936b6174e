"""exercise: capacity_keep
kind: wrong
keeps the largest weights (batch-prioritised), not token order"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def capacity_keep(weights, experts, n_experts, capacity):
    flat = experts.reshape(-1)
    wf = weights.reshape(-1)
    keep = torch.zeros_like(flat, dtype=torch.bool)
    for e in range(n_experts):
        idx = torch.nonzero(flat == e).flatten()
        best = idx[torch.argsort(wf[idx], descending=True, stable=True)][:capacity]
        keep[best] = True
    return keep.reshape(experts.shape)
