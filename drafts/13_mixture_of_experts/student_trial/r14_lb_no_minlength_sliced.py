"""exercise: load_balancing_loss
kind: right
bincount without minlength, P cut to the same length (the idle trailing experts have f = 0, so value and gradient are unchanged)"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def load_balancing_loss(router_probs, experts, n_experts):
    f = torch.bincount(experts.reshape(-1)).to(router_probs.dtype) / experts.numel()
    P = router_probs.mean(0)[: len(f)]
    return n_experts * (f * P).sum()
