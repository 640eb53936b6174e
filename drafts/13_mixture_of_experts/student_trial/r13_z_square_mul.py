"""exercise: router_z_loss
kind: right
lse * lse, mean via sum / numel"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def router_z_loss(logits):
    lse = torch.logsumexp(logits, -1)
    return (lse * lse).sum() / lse.numel()
