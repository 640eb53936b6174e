"""exercise: load_balancing_loss
kind: wrong
P_i averaged only over the probabilities of the chosen experts (zeros elsewhere)"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def load_balancing_loss(router_probs, experts, n_experts):
    mask = torch.zeros_like(router_probs).scatter(1, experts, 1.0)
    f = torch.bincount(experts.reshape(-1), minlength=n_experts).to(router_probs.dtype) / experts.numel()
    P = (router_probs * mask).mean(0)
    return n_experts * (f * P).sum()
