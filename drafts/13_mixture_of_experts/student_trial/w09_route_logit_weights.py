"""exercise: route
kind: wrong
weights are the logits of the chosen experts, not probabilities"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def route(x, w_gate, k, normalize=True):
    logits = x @ w_gate
    top = torch.sort(logits, dim=-1, descending=True, stable=True)
    weights = top.values[:, :k]
    if normalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return weights, top.indices[:, :k]
