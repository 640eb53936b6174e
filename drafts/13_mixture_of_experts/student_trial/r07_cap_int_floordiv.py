"""exercise: expert_capacity
kind: right
int of negative floor division"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def expert_capacity(n_tokens, n_experts, k, capacity_factor):
    return int(-(-(capacity_factor * k * n_tokens) // n_experts))
