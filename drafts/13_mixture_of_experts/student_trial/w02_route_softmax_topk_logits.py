"""exercise: route
kind: wrong
softmax over the k chosen logits (wrong when normalize=False)"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def route(x, w_gate, k, normalize=True):
    logits = x @ w_gate
    top = torch.sort(logits, dim=-1, descending=True, stable=True)
    experts = top.indices[:, :k]
    weights = torch.softmax(top.values[:, :k], dim=-1)
    return weights, experts
