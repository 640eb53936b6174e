"""exercise: route
kind: wrong
argsort(descending=True) without stable=True (ties unspecified)"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def route(x, w_gate, k, normalize=True):
    probs = torch.softmax(x @ w_gate, dim=-1)
    experts = torch.argsort(probs, dim=-1, descending=True)[:, :k]
    weights = probs.gather(1, experts)
    if normalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return weights, experts
