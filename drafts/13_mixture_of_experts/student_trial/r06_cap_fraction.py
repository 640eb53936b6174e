"""exercise: expert_capacity
kind: right
exact arithmetic with fractions.Fraction"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F

from fractions import Fraction


def expert_capacity(n_tokens, n_experts, k, capacity_factor):
    return math.ceil(Fraction(capacity_factor) * k * n_tokens / n_experts)
