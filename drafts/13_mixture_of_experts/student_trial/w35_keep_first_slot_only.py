"""exercise: capacity_keep
kind: wrong
counts only slot-0 assignments towards the capacity"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def capacity_keep(weights, experts, n_experts, capacity):
    T, k = experts.shape
    keep = torch.zeros(T, k, dtype=torch.bool)
    for j in range(k):
        col = experts[:, j]
        onehot = F.one_hot(col, n_experts)
        pos = (onehot.cumsum(0) - 1).gather(1, col[:, None])[:, 0]
        keep[:, j] = pos < capacity
    return keep
