"""exercise: load_balancing_loss
kind: wrong
f from the probabilities (E * sum P_i^2)"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def load_balancing_loss(router_probs, experts, n_experts):
    P = router_probs.mean(0)
    return n_experts * (P * P).sum()
