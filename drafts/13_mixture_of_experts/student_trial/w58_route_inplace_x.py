"""exercise: route
kind: wrong
centres x in place (x -= x.mean) before the gate: modifies the input"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def route(x, w_gate, k, normalize=True):
    x -= x.mean(dim=-1, keepdim=True)
    probs = torch.softmax(x @ w_gate, dim=-1)
    top = torch.sort(probs, dim=-1, descending=True, stable=True)
    weights = top.values[:, :k]
    if normalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return weights, top.indices[:, :k]
