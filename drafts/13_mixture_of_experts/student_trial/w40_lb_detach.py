"""exercise: load_balancing_loss
kind: wrong
probabilities detached: no gradient"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def load_balancing_loss(router_probs, experts, n_experts):
    f = torch.bincount(experts.reshape(-1), minlength=n_experts).to(router_probs.dtype) / experts.numel()
    return n_experts * (f * router_probs.detach().mean(0)).sum()
