"""exercise: router_z_loss
kind: wrong
logsumexp of logits.float(): float64 logits give a float32 loss"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def router_z_loss(logits):
    return (torch.logsumexp(logits.float(), dim=-1) ** 2).mean()
