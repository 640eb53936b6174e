"""exercise: load_balancing_loss
kind: wrong
clamps router_probs in place (clamp_) before the mean: modifies the input"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def load_balancing_loss(router_probs, experts, n_experts):
    with torch.no_grad():
        router_probs.clamp_(min=1e-9)
    f = torch.bincount(experts.reshape(-1), minlength=n_experts).to(router_probs.dtype) / experts.numel()
    return n_experts * (f * router_probs.mean(0)).sum()
