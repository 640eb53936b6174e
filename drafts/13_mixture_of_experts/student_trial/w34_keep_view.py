"""exercise: capacity_keep
kind: wrong
experts.view(-1) (fails on non-contiguous views)"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def capacity_keep(weights, experts, n_experts, capacity):
    flat = experts.view(-1)
    onehot = F.one_hot(flat, n_experts)
    pos = (onehot.cumsum(0) - 1).gather(1, flat[:, None])[:, 0]
    return (pos < capacity).view(experts.shape)
