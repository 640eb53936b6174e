"""exercise: capacity_keep
kind: wrong
counts slot 0 of every token before slot 1 (column-major), not token order"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def capacity_keep(weights, experts, n_experts, capacity):
    flat = experts.t().reshape(-1)
    onehot = F.one_hot(flat, n_experts)
    pos = (onehot.cumsum(0) - 1).gather(1, flat[:, None])[:, 0]
    return (pos < capacity).reshape(experts.shape[1], experts.shape[0]).t()
