"""exercise: route
kind: wrong
torch.topk, which promises no order among ties"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def route(x, w_gate, k, normalize=True):
    probs = torch.softmax(x @ w_gate, dim=-1)
    weights, experts = torch.topk(probs, k, dim=-1)
    if normalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return weights, experts
