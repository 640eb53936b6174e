"""exercise: load_balancing_loss
kind: wrong
f built as float32 (.float()): float64 loss comes back float32"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def load_balancing_loss(router_probs, experts, n_experts):
    f = torch.bincount(experts.reshape(-1), minlength=n_experts).float() / experts.numel()
    return n_experts * (f * router_probs.float().mean(0)).sum()
