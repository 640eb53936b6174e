"""exercise: load_balancing_loss
kind: wrong
bincount without minlength: shape mismatch when the last expert is idle"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def load_balancing_loss(router_probs, experts, n_experts):
    f = torch.bincount(experts.reshape(-1)).to(router_probs.dtype) / experts.numel()
    return n_experts * (f * router_probs.mean(0)).sum()
