"""exercise: router_z_loss
kind: wrong
mean over dim 0 only: a vector for 3-dim logits"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def router_z_loss(logits):
    return (torch.logsumexp(logits, dim=-1) ** 2).mean(0)
