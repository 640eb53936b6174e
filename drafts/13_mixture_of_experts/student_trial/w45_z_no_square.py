"""exercise: router_z_loss
kind: wrong
no square"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def router_z_loss(logits):
    return torch.logsumexp(logits, dim=-1).mean()
