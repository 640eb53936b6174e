"""exercise: route
kind: wrong
stable ascending sort then flip: ties go to the higher index"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def route(x, w_gate, k, normalize=True):
    probs = torch.softmax(x @ w_gate, dim=-1)
    experts = torch.argsort(probs, dim=-1, stable=True).flip(-1)[:, :k]
    weights = probs.gather(1, experts)
    if normalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return weights, experts
