"""exercise: route
kind: wrong
always renormalises, ignoring normalize=False"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def route(x, w_gate, k, normalize=True):
    probs = torch.softmax(x @ w_gate, dim=-1)
    top = torch.sort(probs, dim=-1, descending=True, stable=True)
    weights = top.values[:, :k]
    return weights / weights.sum(-1, keepdim=True), top.indices[:, :k]
