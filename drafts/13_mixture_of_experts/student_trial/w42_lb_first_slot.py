"""exercise: load_balancing_loss
kind: wrong
f from the first slot only (top-1 counts)"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def load_balancing_loss(router_probs, experts, n_experts):
    f = torch.bincount(experts[:, 0], minlength=n_experts).to(router_probs.dtype) / experts.shape[0]
    return n_experts * (f * router_probs.mean(0)).sum()
