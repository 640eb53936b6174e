"""exercise: load_balancing_loss
kind: right
float64 internally with einsum, cast back"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def load_balancing_loss(router_probs, experts, n_experts):
    T, k = experts.shape
    counts = torch.zeros(n_experts, dtype=torch.float64).index_add_(
        0, experts.reshape(-1), torch.ones(T * k, dtype=torch.float64)
    )
    f = counts / (T * k)
    P = router_probs.double().mean(0)
    return (n_experts * torch.einsum("e,e->", f, P)).to(router_probs.dtype)
