"""exercise: router_z_loss
kind: wrong
logsumexp over dim 0"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def router_z_loss(logits):
    return (torch.logsumexp(logits, dim=0) ** 2).mean()
