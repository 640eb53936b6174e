"""exercise: load_balancing_loss
kind: wrong
f divided by T only (k times too large, Mixtral's)"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def load_balancing_loss(router_probs, experts, n_experts):
    counts = torch.bincount(experts.reshape(-1), minlength=n_experts).to(router_probs.dtype)
    return n_experts * (counts / router_probs.shape[0] * router_probs.mean(0)).sum()
