"""exercise: moe_forward
kind: wrong
stacks every expert's output into a (T, E, d) tensor and gathers"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def moe_forward(x, w_gate, experts, k, normalize=True):
    weights, chosen = route(x, w_gate, k, normalize)
    allout = torch.stack([f(x) for f in experts], dim=1)  # (T, E, d)
    picked = allout[torch.arange(x.shape[0])[:, None], chosen]  # (T, k, d)
    return (picked * weights[..., None]).sum(1)
