"""exercise: capacity_keep
kind: right
Python loop with a counter per expert, token order"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def capacity_keep(weights, experts, n_experts, capacity):
    T, k = experts.shape
    used = [0] * n_experts
    keep = torch.zeros(T, k, dtype=torch.bool)
    for t in range(T):
        for j in range(k):
            e = int(experts[t, j])
            if used[e] < capacity:
                keep[t, j] = True
            used[e] += 1
    return keep
