"""exercise: expert_capacity
kind: wrong
capacity clamped to n_tokens (min(C, T)), which the formula does not do"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def expert_capacity(n_tokens, n_experts, k, capacity_factor):
    return min(math.ceil(capacity_factor * k * n_tokens / n_experts), n_tokens)
