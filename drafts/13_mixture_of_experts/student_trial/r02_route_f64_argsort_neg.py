"""exercise: route
kind: right
float64 internally, stable argsort of -probs, cast back"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def route(x, w_gate, k, normalize=True):
    logits = torch.einsum("td,de->te", x.double(), w_gate.double())
    probs = torch.softmax(logits, dim=-1)
    experts = torch.argsort(-probs, dim=-1, stable=True)[:, :k]
    weights = torch.gather(probs, 1, experts)
    if normalize:
        weights = weights / weights.sum(dim=1, keepdim=True)
    return weights.to(x.dtype), experts
