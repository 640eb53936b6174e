"""exercise: router_z_loss
kind: wrong
max-shifted log-sum-exp that forgets to add the max back"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def router_z_loss(logits):
    m = logits.max(dim=-1, keepdim=True).values
    lse = torch.log(torch.exp(logits - m).sum(-1))
    return (lse**2).mean()
