"""exercise: load_balancing_loss
kind: right
one-hot mean for f, float64-free, dot product"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def load_balancing_loss(router_probs, experts, n_experts):
    onehot = F.one_hot(experts, n_experts).to(router_probs.dtype)  # (T, k, E)
    f = onehot.mean(dim=(0, 1))
    P = router_probs.mean(dim=0)
    return n_experts * torch.dot(f, P)
